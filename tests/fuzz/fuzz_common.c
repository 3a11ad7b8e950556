/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the fuzz targets: see fuzz_common.h. */
#include "fuzz_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static void drop_log(enum vw_log_level level, const char *msg, void *userdata)
{
	(void)level, (void)msg, (void)userdata;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	vw_log_set_sink(drop_log, NULL);
	return 0;
}

void vw_fuzz_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz property broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

char *vw_fuzz_strdup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

static bool is_lower_hex(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

size_t vw_fuzz_hex64(const uint8_t *data, size_t size, char (*ids)[VW_FUZZ_HEX64], size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < size && n < max;) {
		size_t run = 0;
		bool dup = false;

		while (i + run < size && is_lower_hex(data[i + run]))
			run++;
		if (run == 64) {
			for (size_t k = 0; k < n && !dup; k++)
				dup = memcmp(ids[k], data + i, 64) == 0;
			if (!dup) {
				memcpy(ids[n], data + i, 64);
				ids[n++][64] = '\0';
			}
		}
		i += run ? run : 1;
	}
	return n;
}

bool vw_fuzz_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned cp, need;

		if (*p < 0x80) {
			p++;
			continue;
		}
		if (*p >= 0xc2 && *p <= 0xdf)
			cp = *p & 0x1f, need = 1;
		else if (*p >= 0xe0 && *p <= 0xef)
			cp = *p & 0x0f, need = 2;
		else if (*p >= 0xf0 && *p <= 0xf4)
			cp = *p & 0x07, need = 3;
		else
			return false;
		p++;
		for (unsigned k = 0; k < need; k++, p++) {
			if ((*p & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (*p & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
	}
	return true;
}

bool vw_fuzz_charset(const char *s, const char *allowed)
{
	return s[strspn(s, allowed)] == '\0';
}

bool vw_fuzz_terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}
