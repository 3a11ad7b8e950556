/* SPDX-License-Identifier: Apache-2.0 */
#include "tls_fixture.h"

#include <crypt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

static const char gen_script[] =
	"set -e; cd \"$1\"\n"
	"key() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $1.key "
	"-out $1.csr -subj /CN=$1; }\n"
	"ca() { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "
	"$1.key -out $1.crt -subj /CN=vw-test-$1 -days 2; }\n"
	"sign() { openssl x509 -req -in $1.csr -CA $2.crt -CAkey $2.key -CAcreateserial -out "
	"$1.crt -days 2 $3; }\n"
	"printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' >san.ext\n"
	"ca ca; ca other-ca\n"
	"key server; sign server ca '-extfile san.ext'\n"
	"key server2; sign server2 other-ca '-extfile san.ext'\n"
	"key client; sign client ca\n"
	"key stranger; sign stranger other-ca\n";

int tls_fixture_init(struct tls_fixture *f)
{
	char *cmd = NULL;
	int r;

	f->dir = NULL;
	if (system("command -v openssl >/dev/null 2>&1") != 0)
		return -ENOENT;
	f->dir = vw_fixture_mkdtemp("tls");
	if (!f->dir)
		return -errno;
	if (vw_fixture_write(f->dir, "gen.sh", gen_script, 0) < 0 ||
	    asprintf(&cmd, "sh %s/gen.sh %s >%s/gen.log 2>&1", f->dir, f->dir, f->dir) < 0)
		return -ENOMEM;
	r = system(cmd);
	free(cmd);
	return r == 0 ? 0 : -EIO;
}

void tls_fixture_fini(struct tls_fixture *f)
{
	vw_fixture_rm(f->dir);
	f->dir = NULL;
}

const char *tls_fixture_path(const struct tls_fixture *f, const char *name, char *buf,
			     size_t size)
{
	snprintf(buf, size, "%s/%s", f->dir, name);
	return buf;
}

/* htpasswd -nbBC 5 x PW prints "x:$2y$05$...". */
static int htpasswd_bcrypt(const char *pw, char *out, size_t size)
{
	char cmd[512], line[256];
	FILE *p;
	char *h;

	if (strpbrk(pw, "'\\") || system("command -v htpasswd >/dev/null 2>&1") != 0)
		return -ENOENT;
	snprintf(cmd, sizeof(cmd), "htpasswd -nbBC 5 x '%s'", pw);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	h = fgets(line, sizeof(line), p);
	pclose(p);
	if (!h || strncmp(line, "x:", 2) != 0)
		return -EIO;
	line[strcspn(line, "\r\n")] = '\0';
	snprintf(out, size, "%s", line + 2);
	return 0;
}

int tls_fixture_bcrypt(const char *pw, char *out, size_t size)
{
	char salt[CRYPT_GENSALT_OUTPUT_SIZE];
	struct crypt_data cd = { 0 };

	if (htpasswd_bcrypt(pw, out, size) == 0)
		return 0;
	if (!crypt_gensalt_rn("$2b$", 5, NULL, 0, salt, sizeof(salt)) ||
	    !crypt_rn(pw, salt, &cd, sizeof(cd)) || cd.output[0] == '*')
		return -EINVAL;
	snprintf(out, size, "%s", cd.output);
	return 0;
}

int tls_fixture_skip(const char *why)
{
	const char *ci = getenv("CI");

	if (ci && strcmp(ci, "true") == 0) {
		printf("1..1\nnot ok 1 - cannot run: %s (CI=true: a skip is a failure)\n", why);
		return 1;
	}
	printf("1..0 # SKIP %s\n", why);
	return 0;
}
