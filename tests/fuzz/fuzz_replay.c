/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replays a fuzz corpus through LLVMFuzzerTestOneInput without libFuzzer, so every build (gcc,
 * ASan+UBSan) runs the checked-in corpus. Arguments: files or directories. Prints TAP.
 * LLVMFuzzerInitialize runs first, as libFuzzer runs it.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int n_run;

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long len;
	int r = -1;

	if (!f)
		goto out;
	if (fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
		goto out;
	buf = malloc((size_t)len + 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len)
		goto out;
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	r = 0;
out:
	printf("%sok %d - %s\n", r ? "not " : "", ++n_run, path);
	free(buf);
	if (f)
		fclose(f);
	return r;
}

static int run_dir(const char *dir)
{
	struct dirent **list;
	int n = scandir(dir, &list, NULL, alphasort), bad = 0;

	if (n < 0) {
		printf("not ok %d - cannot read %s\n", ++n_run, dir);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];

		if (list[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
			bad += run_file(path) != 0;
		}
		free(list[i]);
	}
	free(list);
	return bad;
}

int main(int argc, char **argv)
{
	int bad = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			bad += run_dir(argv[i]);
		else
			bad += run_file(argv[i]) != 0;
	}
	printf("1..%d\n", n_run);
	return bad ? 1 : 0;
}
