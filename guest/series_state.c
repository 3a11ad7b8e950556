/* SPDX-License-Identifier: Apache-2.0 */
#include "series_state.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "fileio.h"
#include "macro.h"

struct entry {
	char *key; /* NULL: free slot */
	uint64_t last_raw, offset;
	uint64_t seen_gen;
};

struct vw_series_state {
	struct entry *tab;
	size_t cap, n; /* cap is a power of two */
	uint64_t gen;
	size_t max;
	uint64_t evictions;
	bool dirty; /* an exported value changed since the last save or load */
};

static uint64_t fnv1a(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

struct vw_series_state *vw_series_state_new(size_t max_series)
{
	struct vw_series_state *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->max = max_series ? max_series : VW_SERIES_STATE_DEFAULT_MAX;
	s->cap = 256;
	s->tab = calloc(s->cap, sizeof(*s->tab));
	if (!s->tab) {
		free(s);
		return NULL;
	}
	return s;
}

void vw_series_state_free(struct vw_series_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->cap; i++)
		free(s->tab[i].key);
	free(s->tab);
	free(s);
}

static struct entry *find(const struct vw_series_state *s, const char *key, size_t len)
{
	size_t mask = s->cap - 1;

	for (size_t i = fnv1a(key, len) & mask;; i = (i + 1) & mask) {
		struct entry *e = &s->tab[i];

		if (!e->key || (strncmp(e->key, key, len) == 0 && e->key[len] == '\0'))
			return e;
	}
}

static bool stale(const struct vw_series_state *s, const struct entry *e)
{
	return s->gen > e->seen_gen && s->gen - e->seen_gen > VW_SERIES_STATE_KEEP;
}

/* Rebuild the table with cap slots, dropping series not seen for long and, when evict, those
 * last seen at or before `upto`. */
static int rebuild(struct vw_series_state *s, size_t cap, bool evict, uint64_t upto)
{
	struct entry *tab = calloc(cap, sizeof(*tab));
	struct vw_series_state n = { .tab = tab, .cap = cap };

	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		struct entry *e = &s->tab[i];

		if (!e->key)
			continue;
		if (stale(s, e) || (evict && e->seen_gen <= upto)) {
			s->evictions += !stale(s, e);
			s->dirty = true;
			free(e->key);
			continue;
		}
		*find(&n, e->key, strlen(e->key)) = *e;
		n.n++;
	}
	free(s->tab);
	s->tab = tab;
	s->n = n.n;
	s->cap = cap;
	return 0;
}

static int grow(struct vw_series_state *s)
{
	return rebuild(s, s->cap * 2, false, 0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * After a learning pass: over max_series, evict the series unseen the longest (never one of
 * this pass) until max_series remain or only this pass's are left. Series last seen in the same
 * render go together, so a few more may go than strictly needed.
 */
static int trim(struct vw_series_state *s)
{
	_cleanup_free_ uint64_t *seen = NULL;
	size_t k = 0, excess;

	if (s->n <= s->max)
		return 0;
	seen = malloc(s->n * sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		if (s->tab[i].key && s->tab[i].seen_gen < s->gen)
			seen[k++] = s->tab[i].seen_gen;
	if (k == 0)
		return 0;
	excess = VW_MIN(s->n - s->max, k);
	qsort(seen, k, sizeof(*seen), cmp_u64);
	return rebuild(s, s->cap, true, seen[excess - 1]);
}

static struct entry *insert(struct vw_series_state *s, const char *key, size_t len)
{
	struct entry *e;

	if ((s->n + 1) * 2 > s->cap && grow(s) < 0)
		return NULL;
	e = find(s, key, len);
	if (!e->key) {
		e->key = strndup(key, len);
		if (!e->key)
			return NULL;
		e->last_raw = e->offset = 0;
		e->seen_gen = s->gen;
		s->n++;
		s->dirty = true;
	}
	return e;
}

/* "123", "123.456789" (digits beyond the sixth dropped), else any finite non-negative double. */
static bool parse_micro(const char *p, size_t len, uint64_t *ret)
{
	char buf[64], *end;
	uint64_t ip = 0, frac = 0, scale = 100000;
	size_t i = 0;
	double d;

	if (len == 0 || len >= sizeof(buf))
		return false;
	for (; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
		if (ip > (UINT64_MAX / 1000000 - 9) / 10)
			goto dbl;
		ip = ip * 10 + (uint64_t)(p[i] - '0');
	}
	if (i == 0)
		goto dbl;
	if (i < len && p[i] == '.') {
		for (i++; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
			frac += (uint64_t)(p[i] - '0') * scale;
			scale /= 10;
		}
	}
	if (i == len) {
		*ret = ip * 1000000 + frac;
		return true;
	}
dbl:
	memcpy(buf, p, len);
	buf[len] = '\0';
	d = strtod(buf, &end);
	if (*end || !isfinite(d) || d < 0 || d >= 1.8e13)
		return false;
	*ret = (uint64_t)llround(d * 1e6);
	return true;
}

static int put_micro(FILE *f, uint64_t v)
{
	uint64_t frac = v % 1000000;
	char digits[8];
	int n;

	if (!frac)
		return fprintf(f, "%" PRIu64, v / 1000000);
	n = snprintf(digits, sizeof(digits), "%06" PRIu64, frac);
	while (n > 0 && digits[n - 1] == '0')
		digits[--n] = '\0';
	return fprintf(f, "%" PRIu64 ".%s", v / 1000000, digits);
}

static bool ends_with_total(const char *name, size_t len)
{
	return len > 6 && memcmp(name + len - 6, "_total", 6) == 0;
}

/* One sample line of a counter family: the exported value, with the offset added. */
static int counter_line(struct vw_series_state *s, const char *line, size_t len, bool learn,
			FILE *out)
{
	const char *sp = memrchr(line, ' ', len);
	size_t name_len = strcspn(line, "{ ");
	struct entry *e;
	uint64_t raw;

	if (!sp || name_len > len || !ends_with_total(line, name_len) ||
	    !parse_micro(sp + 1, len - (size_t)(sp + 1 - line), &raw))
		goto verbatim;
	if (learn && (size_t)(sp - line) > VW_SERIES_KEY_MAX) {
		s->evictions++; /* never a rendered series: passed through as is */
		goto verbatim;
	}
	if (learn) {
		e = insert(s, line, (size_t)(sp - line));
		if (!e)
			return -ENOMEM;
		if (raw < e->last_raw)
			e->offset = vw_energy_add(e->offset, e->last_raw);
		s->dirty |= raw != e->last_raw;
		e->last_raw = raw;
		e->seen_gen = s->gen;
	} else {
		e = find(s, line, (size_t)(sp - line));
		if (!e->key)
			goto verbatim;
	}
	if (e->offset == 0)
		goto verbatim;
	fwrite(line, 1, (size_t)(sp + 1 - line), out);
	put_micro(out, vw_energy_add(e->offset, raw));
	fputc('\n', out);
	return 0;
verbatim:
	fwrite(line, 1, len, out);
	fputc('\n', out);
	return 0;
}

int vw_series_state_apply(struct vw_series_state *s, const char *in, size_t len, bool learn,
			  char **ret, size_t *ret_len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&buf, &size);
	bool counter = false;
	int r = 0;

	if (!out)
		return -errno;
	if (learn)
		s->gen++;
	for (size_t pos = 0; pos < len && r == 0;) {
		const char *line = in + pos, *nl = memchr(line, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - line) : len - pos;

		pos += l + 1;
		if (l > 7 && memcmp(line, "# TYPE ", 7) == 0) {
			counter = l > 8 && memcmp(line + l - 8, " counter", 8) == 0;
			fwrite(line, 1, l, out);
			fputc('\n', out);
		} else if (counter && l && line[0] != '#') {
			r = counter_line(s, line, l, learn, out);
		} else {
			fwrite(line, 1, l, out);
			if (nl)
				fputc('\n', out);
		}
	}
	if (fclose(out) != 0 && r == 0)
		r = -ENOMEM;
	if (r == 0 && learn)
		r = trim(s);
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = size;
	return 0;
}

int vw_series_state_get(const struct vw_series_state *s, const char *key, uint64_t *ret_micro)
{
	const struct entry *e = find(s, key, strlen(key));

	if (!e->key)
		return -ENOENT;
	*ret_micro = vw_energy_add(e->offset, e->last_raw);
	return 0;
}

size_t vw_series_state_size(const struct vw_series_state *s)
{
	return s->n;
}

uint64_t vw_series_state_evictions(const struct vw_series_state *s)
{
	return s->evictions;
}

bool vw_series_state_dirty(const struct vw_series_state *s)
{
	return s->dirty;
}

size_t vw_series_state_max_file_bytes(size_t max_series)
{
	/* "key":value, with every key byte escaped and the value at 19 digits, plus the frame. */
	return max_series * (2 * VW_SERIES_KEY_MAX + 32) + 4096;
}

int vw_series_state_save(struct vw_series_state *s, int dirfd, const char *rel, bool clean)
{
	struct json_object *root = json_object_new_object(), *series = json_object_new_object();
	const char *text;
	int r = -ENOMEM;

	if (!root || !series)
		goto done;
	for (size_t i = 0; i < s->cap; i++) {
		const struct entry *e = &s->tab[i];
		uint64_t v;

		if (!e->key || stale(s, e))
			continue;
		v = vw_energy_add(e->offset, e->last_raw);
		if (v > INT64_MAX)
			v = INT64_MAX;
		if (json_object_object_add(series, e->key, json_object_new_int64((int64_t)v)) < 0)
			goto done;
	}
	json_object_object_add(root, "v", json_object_new_int(1));
	json_object_object_add(root, "clean", json_object_new_boolean(clean));
	json_object_object_add(root, "series", VW_TAKE_PTR(series));
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	r = text ? vw_write_file_durable_at(dirfd, rel, text, strlen(text), 0600) : -ENOMEM;
	if (r == 0)
		s->dirty = false;
done:
	json_object_put(series);
	json_object_put(root);
	return r;
}

/* The whole text as one JSON object (trailing whitespace allowed); NULL when it is not. */
static struct json_object *parse_whole(const char *buf, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root;
	size_t used;

	if (!tok || len > INT32_MAX) {
		json_tokener_free(tok);
		return NULL;
	}
	root = json_tokener_parse_ex(tok, buf, (int)len);
	used = (size_t)json_tokener_get_parse_end(tok);
	if (json_tokener_get_error(tok) != json_tokener_success)
		used = 0;
	json_tokener_free(tok);
	while (root && used < len && strchr(" \t\r\n", buf[used]) && buf[used])
		used++;
	if (root && used != len) {
		json_object_put(root);
		return NULL;
	}
	return root;
}

/* Every entry a key of sane length with a non-negative integer: else the file is not ours. */
static bool series_valid(struct json_object *series)
{
	json_object_object_foreach(series, key, val) {
		if (strlen(key) == 0 || strlen(key) > VW_SERIES_KEY_MAX ||
		    !json_object_is_type(val, json_type_int) || json_object_get_int64(val) < 0)
			return false;
	}
	return true;
}

int vw_series_state_load(struct vw_series_state *s, int dirfd, const char *rel, bool *ret_clean)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = vw_read_alloc_in_root(dirfd, rel, vw_series_state_max_file_bytes(s->max), &buf, &len,
				  NULL);
	if (r < 0)
		return r;
	return vw_series_state_load_buf(s, buf, len, ret_clean);
}

int vw_series_state_load_buf(struct vw_series_state *s, const char *buf, size_t len,
			     bool *ret_clean)
{
	struct json_object *root, *v, *series, *clean;
	size_t loaded = 0;
	int r = 0;

	if (len > vw_series_state_max_file_bytes(s->max))
		return -EFBIG;
	root = parse_whole(buf, len);
	if (!root || !json_object_object_get_ex(root, "v", &v) || json_object_get_int(v) != 1 ||
	    !json_object_object_get_ex(root, "series", &series) ||
	    !json_object_is_type(series, json_type_object) || !series_valid(series)) {
		json_object_put(root);
		return -EINVAL;
	}
	if (ret_clean) /* files from before the flag existed were written every interval */
		*ret_clean = !json_object_object_get_ex(root, "clean", &clean) ||
			     json_object_get_boolean(clean);
	json_object_object_foreach(series, key, val) {
		struct entry *e;

		if (loaded == s->max) {
			s->evictions++;
			continue;
		}
		e = insert(s, key, strlen(key));
		if (!e) {
			r = -ENOMEM;
			break;
		}
		/* The next raw value counts from the restart: all we exported is the offset. */
		e->offset = (uint64_t)json_object_get_int64(val);
		e->last_raw = 0;
		loaded++;
	}
	json_object_put(root);
	s->dirty = false;
	return r;
}
