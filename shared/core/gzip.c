/* SPDX-License-Identifier: Apache-2.0 */
#include "gzip.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

int vw_gzip(const void *in, size_t len, char **ret, size_t *ret_len)
{
	return vw_gzip_level(in, len, 6, ret, ret_len);
}

int vw_gzip_level(const void *in, size_t len, int level, char **ret, size_t *ret_len)
{
	z_stream zs = { 0 };
	uLong bound;
	char *out;
	int r;

	if (level < 1 || level > 9)
		return -EINVAL;
	if (len > UINT32_MAX)
		return -EFBIG;
	/* windowBits 15 + 16: a gzip header and trailer. */
	if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&zs, (uLong)len);
	out = malloc(bound);
	if (!out) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)out;
	zs.avail_out = (uInt)bound;
	r = deflate(&zs, Z_FINISH);
	*ret_len = zs.total_out;
	deflateEnd(&zs);
	if (r != Z_STREAM_END) {
		free(out);
		return -EIO;
	}
	*ret = out;
	return 0;
}
