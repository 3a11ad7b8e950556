/* SPDX-License-Identifier: Apache-2.0 */
#include "series_state.h"
#include "series_state_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "fileio.h"
#include "json.h"
#include "macro.h"
#include "prom.h"
#include "selfstats.h"

/*
 * A key is kept as its metric name's number in the state's list of names (two bytes, high
 * first) followed by the rest (labels) and a NUL: the few counter families' names are not
 * repeated in every series (~35 bytes of ~160). NAME_NONE: the rest is the whole key (the
 * list is full).
 */
#define NAME_NONE 0xffffu

struct entry {
	char *key;
	uint64_t last_raw, offset;
	uint64_t seen_gen;
};

/* A key cut in two: the name's number (NAME_NONE: none) and the rest. */
struct split {
	unsigned name;
	const char *rest;
	size_t rest_len;
	uint64_t hash; /* of the whole key */
};

/*
 * The series in a dense array (n of cap_ent) and an open-addressing index over it (cap slots,
 * a power of two, at most half full: an entry's position + 1, 0 a free slot): 32 bytes a series
 * and 8 to 16 of index, where a table of entries at that load took 64 to 128.
 */
struct vw_series_state {
	struct entry *ent;
	uint32_t *idx;
	size_t cap, n, cap_ent;
	char **names; /* metric names, NAME_NONE at most */
	size_t n_names, cap_names, last_name;
	uint64_t gen;
	size_t max;
	uint64_t evictions;
	bool dirty; /* an exported value changed since the last save or load */
};

#define FNV_BASIS 0xcbf29ce484222325ULL

static uint64_t fnv1a(uint64_t h, const char *s, size_t len)
{
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
	s->idx = calloc(s->cap, sizeof(*s->idx));
	if (!s->idx) {
		free(s);
		return NULL;
	}
	return s;
}

void vw_series_state_free(struct vw_series_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->ent[i].key);
	for (size_t i = 0; i < s->n_names; i++)
		free(s->names[i]);
	free(s->names);
	free(s->ent);
	free(s->idx);
	free(s);
}

static unsigned key_name(const struct entry *e)
{
	return (unsigned)(unsigned char)e->key[0] << 8 | (unsigned char)e->key[1];
}

static const char *key_rest(const struct entry *e)
{
	return e->key + 2;
}

/* The number of a name of len bytes in the list; NAME_NONE when it is not there and either
 * add is false or the list is full (or out of memory: the key is then kept whole). */
static unsigned name_of(struct vw_series_state *s, const char *name, size_t len, bool add)
{
	size_t i = s->last_name; /* a rendering hands a family's series over in a row */
	char *copy;

	if (i < s->n_names && strncmp(s->names[i], name, len) == 0 && s->names[i][len] == '\0')
		return (unsigned)i;
	for (i = 0; i < s->n_names; i++)
		if (strncmp(s->names[i], name, len) == 0 && s->names[i][len] == '\0')
			return (unsigned)(s->last_name = i);
	if (!add || s->n_names >= NAME_NONE ||
	    vw_array_grow((void **)&s->names, sizeof(*s->names), s->n_names, &s->cap_names) < 0 ||
	    !(copy = strndup(name, len)))
		return NAME_NONE;
	s->names[s->n_names] = copy;
	return (unsigned)(s->last_name = s->n_names++);
}

static struct split split_key(struct vw_series_state *s, const char *key, size_t len, bool add)
{
	const char *brace = memchr(key, '{', len);
	size_t nlen = brace ? (size_t)(brace - key) : len;
	struct split k = { .name = name_of(s, key, nlen, add), .hash = fnv1a(FNV_BASIS, key, len) };

	k.rest = k.name == NAME_NONE ? key : key + nlen;
	k.rest_len = k.name == NAME_NONE ? len : len - nlen;
	return k;
}

/* The hash of an entry's whole key. */
static uint64_t entry_hash(const struct vw_series_state *s, const struct entry *e)
{
	unsigned name = key_name(e);
	uint64_t h = FNV_BASIS;

	if (name != NAME_NONE)
		h = fnv1a(h, s->names[name], strlen(s->names[name]));
	return fnv1a(h, key_rest(e), strlen(key_rest(e)));
}

/* The index slot of key: the one naming its entry, or the free slot where it would go. */
static uint32_t *slot_of(const struct entry *ent, uint32_t *idx, size_t cap, const struct split *k)
{
	size_t mask = cap - 1;

	for (size_t i = k->hash & mask;; i = (i + 1) & mask) {
		const struct entry *e = idx[i] ? &ent[idx[i] - 1] : NULL;

		if (!e || (key_name(e) == k->name && strncmp(key_rest(e), k->rest, k->rest_len) == 0 &&
			   key_rest(e)[k->rest_len] == '\0'))
			return &idx[i];
	}
}

/* key's entry; NULL when it has none. */
static struct entry *find(const struct vw_series_state *s, const char *key, size_t len)
{
	/* Only the name cache changes: the state is never const where it was made. */
	struct split k = split_key((struct vw_series_state *)s, key, len, false);
	uint32_t i = *slot_of(s->ent, s->idx, s->cap, &k);

	return i ? &s->ent[i - 1] : NULL;
}

static bool stale(const struct vw_series_state *s, const struct entry *e)
{
	return s->gen > e->seen_gen && s->gen - e->seen_gen > VW_SERIES_STATE_KEEP;
}

/* Rebuild the index with cap slots, dropping series not seen for long and, when evict, those
 * last seen at or before `upto` (the entries kept move down, in order). */
static int rebuild(struct vw_series_state *s, size_t cap, bool evict, uint64_t upto)
{
	uint32_t *idx = calloc(cap, sizeof(*idx));
	struct split k;
	size_t n = 0;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		struct entry *e = &s->ent[i];

		if (stale(s, e) || (evict && e->seen_gen <= upto)) {
			s->evictions += !stale(s, e);
			s->dirty = true;
			free(e->key);
			continue;
		}
		s->ent[n] = *e;
		k = (struct split){ .name = key_name(e), .rest = key_rest(e),
				    .rest_len = strlen(key_rest(e)), .hash = entry_hash(s, e) };
		*slot_of(s->ent, idx, cap, &k) = (uint32_t)++n;
	}
	free(s->idx);
	s->idx = idx;
	s->n = n;
	s->cap = cap;
	return 0;
}

static int grow(struct vw_series_state *s)
{
	if (s->cap >= (size_t)UINT32_MAX)
		return -ENOSPC;
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
	for (size_t i = 0; i < s->n; i++)
		if (s->ent[i].seen_gen < s->gen)
			seen[k++] = s->ent[i].seen_gen;
	if (k == 0)
		return 0;
	excess = VW_MIN(s->n - s->max, k);
	qsort(seen, k, sizeof(*seen), cmp_u64);
	return rebuild(s, s->cap, true, seen[excess - 1]);
}

static struct entry *insert(struct vw_series_state *s, const char *key, size_t len)
{
	struct split k;
	struct entry *e;
	uint32_t *slot;

	if ((s->n + 1) * 2 > s->cap && grow(s) < 0)
		return NULL;
	k = split_key(s, key, len, true);
	slot = slot_of(s->ent, s->idx, s->cap, &k);
	if (*slot)
		return &s->ent[*slot - 1];
	if (vw_array_grow((void **)&s->ent, sizeof(*s->ent), s->n, &s->cap_ent) < 0)
		return NULL;
	e = &s->ent[s->n];
	*e = (struct entry){ .key = malloc(2 + k.rest_len + 1), .seen_gen = s->gen };
	if (!e->key)
		return NULL;
	e->key[0] = (char)(k.name >> 8);
	e->key[1] = (char)(k.name & 0xff);
	memcpy(e->key + 2, k.rest, k.rest_len);
	e->key[2 + k.rest_len] = '\0';
	*slot = (uint32_t)++s->n;
	s->dirty = true;
	return e;
}

void vw_series_state_begin(struct vw_series_state *s)
{
	s->gen++;
}

int vw_series_state_end(struct vw_series_state *s)
{
	return trim(s);
}

/* One counter sample: learn its raw value (a fall is a reset: the last value joins the offset)
 * and give the exported value, raw + offset. */
static int counter(struct vw_series_state *s, const char *key, size_t len, uint64_t raw,
		   bool learn, uint64_t *ret)
{
	struct entry *e;

	if (learn && len > VW_SERIES_KEY_MAX) {
		s->evictions++; /* never a rendered series: written as is */
		return 0;
	}
	if (learn) {
		e = insert(s, key, len);
		if (!e)
			return -ENOMEM;
		if (raw < e->last_raw)
			e->offset = vw_energy_add(e->offset, e->last_raw);
		s->dirty |= raw != e->last_raw;
		e->last_raw = raw;
		e->seen_gen = s->gen;
	} else {
		e = find(s, key, len);
		if (!e)
			return 0;
	}
	if (e->offset == 0)
		return 0;
	*ret = vw_energy_add(e->offset, raw);
	return 1;
}

int vw_series_state_learn(void *s, const char *key, size_t len, uint64_t micro, uint64_t *ret)
{
	return counter(s, key, len, micro, true, ret);
}

int vw_series_state_offset(void *s, const char *key, size_t len, uint64_t micro, uint64_t *ret)
{
	return counter(s, key, len, micro, false, ret);
}

int vw_series_state_get(const struct vw_series_state *s, const char *key, uint64_t *ret_micro)
{
	const struct entry *e = find(s, key, strlen(key));

	if (!e)
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

/* One series' "key":value, its length; written at out unless NULL. */
static size_t put_series(const struct vw_series_state *s, const struct entry *e, char *out)
{
	uint64_t v = vw_energy_add(e->offset, e->last_raw);
	const char *name;
	char num[24];
	size_t k, n;

	if (v > INT64_MAX)
		v = INT64_MAX;
	n = (size_t)snprintf(num, sizeof(num), "%s%" PRIu64, "\":", v);
	name = key_name(e) == NAME_NONE ? "" : s->names[key_name(e)];
	/* Bytes that are no UTF-8 (never in a rendered key) kept: the key reads back the same. */
	k = vw_json_escape(name, strlen(name), out ? out + 1 : NULL, VW_JSON_INVALID_KEEP);
	k += vw_json_escape(key_rest(e), strlen(key_rest(e)), out ? out + 1 + k : NULL,
			    VW_JSON_INVALID_KEEP);
	if (out) {
		out[0] = '"';
		memcpy(out + 1 + k, num, n);
	}
	return 1 + k + n;
}

/*
 * Written straight into one buffer of the exact size (two passes over the table), not through
 * a JSON object tree: the tree held every key twice more and the text in a doubling buffer
 * (about 3 times the table, 1.3 MiB at 2,000 series) and left the heap that much larger.
 */
int vw_series_state_save(struct vw_series_state *s, int dirfd, const char *rel, bool clean)
{
	static const char tail[] = "}}";
	_cleanup_free_ char *text = NULL;
	char head[48];
	size_t hlen, len, at;
	bool first = true;
	int r;

	hlen = (size_t)snprintf(head, sizeof(head), "{\"v\":1,\"clean\":%s,\"series\":{",
				clean ? "true" : "false");
	len = hlen + sizeof(tail) - 1;
	for (size_t i = 0; i < s->n; i++)
		if (!stale(s, &s->ent[i]))
			len += put_series(s, &s->ent[i], NULL) + 1; /* and a comma */
	text = malloc(len);
	if (!text)
		return -ENOMEM;
	memcpy(text, head, hlen);
	at = hlen;
	for (size_t i = 0; i < s->n; i++) {
		if (stale(s, &s->ent[i]))
			continue;
		if (!first)
			text[at++] = ',';
		first = false;
		at += put_series(s, &s->ent[i], text + at);
	}
	memcpy(text + at, tail, sizeof(tail) - 1);
	at += sizeof(tail) - 1;
	r = vw_write_file_durable_at(dirfd, rel, text, at, 0600);
	if (r == 0)
		s->dirty = false;
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

void vw_series_state_render_begin(struct vw_series_state *s, struct vw_prom_writer *w, bool text)
{
	if (text)
		vw_series_state_begin(s);
	vw_prom_writer_filter_counters(w, text ? vw_series_state_learn : vw_series_state_offset, s);
}

int vw_series_state_render_end(struct vw_series_state *s, bool text)
{
	return text ? vw_series_state_end(s) : 0;
}

void vw_series_state_table(const struct vw_series_state *s, struct vw_table_stat *t)
{
	*t = (struct vw_table_stat){ .present = true,
				     .entries = vw_series_state_size(s),
				     .evictions = vw_series_state_evictions(s) };
}
