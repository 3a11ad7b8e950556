/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubeconfig files: the YAML read whole into a small tree (libyaml's events, anchors and
 * aliases refused, depth bounded), then the current context resolved to its cluster and user.
 */
#include "kubeconfig.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "macro.h"
#include "yaml_reader.h"

#define KUBECONFIG_MAX_BYTES (1024 * 1024)
#define MAX_DEPTH 16

enum node_kind { N_SCALAR, N_SEQ, N_MAP };

struct node {
	enum node_kind kind;
	char *text;           /* a scalar's */
	char **keys;          /* a mapping's */
	struct node **kids;   /* a sequence's items, a mapping's values */
	size_t n;
};

static void node_free(struct node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++) {
		node_free(n->kids[i]);
		if (n->keys)
			free(n->keys[i]);
	}
	free(n->kids);
	free(n->keys);
	if (n->text)
		explicit_bzero(n->text, strlen(n->text)); /* tokens, keys */
	free(n->text);
	free(n);
}

static int node_add(struct node *n, char *key, struct node *kid)
{
	struct node **kids = reallocarray(n->kids, n->n + 1, sizeof(*kids));
	char **keys;

	if (!kids)
		return -ENOMEM;
	n->kids = kids;
	if (n->kind == N_MAP) {
		keys = reallocarray(n->keys, n->n + 1, sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		n->keys = keys;
		n->keys[n->n] = key;
	}
	n->kids[n->n++] = kid;
	return 0;
}

static int build(struct vw_yaml *y, yaml_event_t *ev, int depth, struct node **ret);

/* The items of a sequence or the pairs of a mapping, after its start event. */
static int build_children(struct vw_yaml *y, struct node *n, int depth)
{
	for (;;) {
		_cleanup_yaml_event_ yaml_event_t ev = { 0 };
		_cleanup_free_ char *key = NULL;
		struct node *kid = NULL;
		int r = vw_yaml_next(y, &ev);

		if (r < 0)
			return r;
		if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		if (n->kind == N_MAP) {
			if (ev.type != YAML_SCALAR_EVENT)
				return vw_yaml_err(y, &ev.start_mark, "a mapping key must be a scalar");
			key = strdup((const char *)ev.data.scalar.value);
			if (!key)
				return -ENOMEM;
			r = vw_yaml_next(y, &ev);
			if (r < 0)
				return r;
		}
		r = build(y, &ev, depth + 1, &kid);
		if (r == 0 && (r = node_add(n, key, kid)) == 0)
			key = NULL; /* the node has it */
		if (r < 0) {
			node_free(kid);
			return r;
		}
	}
}

static int build(struct vw_yaml *y, yaml_event_t *ev, int depth, struct node **ret)
{
	struct node *n;
	int r;

	if (depth > MAX_DEPTH)
		return vw_yaml_err(y, &ev->start_mark, "nested deeper than %d levels", MAX_DEPTH);
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	if (ev->type == YAML_SCALAR_EVENT) {
		n->kind = N_SCALAR;
		n->text = vw_yaml_is_null(ev) ? NULL : strdup((const char *)ev->data.scalar.value);
		r = n->text || vw_yaml_is_null(ev) ? 0 : -ENOMEM;
	} else if (ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT) {
		n->kind = ev->type == YAML_SEQUENCE_START_EVENT ? N_SEQ : N_MAP;
		r = build_children(y, n, depth);
	} else {
		r = vw_yaml_err(y, &ev->start_mark, "unexpected %s", vw_yaml_kind(ev));
	}
	if (r < 0) {
		node_free(n);
		return r;
	}
	*ret = n;
	return 0;
}

static int read_tree(struct vw_yaml *y, struct node **ret)
{
	_cleanup_yaml_event_ yaml_event_t ev = { 0 };
	int r = vw_yaml_next(y, &ev); /* STREAM_START */

	if (r == 0)
		r = vw_yaml_next(y, &ev); /* DOCUMENT_START, or STREAM_END of an empty file */
	if (r == 0 && ev.type != YAML_DOCUMENT_START_EVENT)
		return vw_yaml_err(y, &ev.start_mark, "empty file");
	if (r == 0)
		r = vw_yaml_next(y, &ev);
	if (r == 0 && ev.type != YAML_MAPPING_START_EVENT)
		return vw_yaml_err(y, &ev.start_mark, "the top level must be a mapping");
	return r < 0 ? r : build(y, &ev, 0, ret);
}

/* ---- lookups --------------------------------------------------------------------------------- */

static const struct node *get(const struct node *m, const char *key)
{
	for (size_t i = 0; m && m->kind == N_MAP && i < m->n; i++)
		if (m->keys[i] && strcmp(m->keys[i], key) == 0)
			return m->kids[i];
	return NULL;
}

static const char *text(const struct node *m, const char *key)
{
	const struct node *n = get(m, key);

	return n && n->kind == N_SCALAR ? n->text : NULL;
}

/* The item of list `key` whose name is `name`: its mapping under `field`. */
static const struct node *named(const struct node *root, const char *key, const char *name,
				const char *field)
{
	const struct node *l = get(root, key);

	for (size_t i = 0; name && l && l->kind == N_SEQ && i < l->n; i++) {
		const char *nm = text(l->kids[i], "name");

		if (nm && strcmp(nm, name) == 0)
			return get(l->kids[i], field);
	}
	return NULL;
}

struct ctx {
	const char *path;
	char *err;
	size_t errlen;
};

static int fail(struct ctx *c, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(struct ctx *c, int r, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "kubeconfig %s: %s", c->path, msg);
	return r;
}

/* A path from the file, relative to its folder as kubectl reads it. */
static int dup_path(struct ctx *c, const char *p, char **ret)
{
	const char *slash = strrchr(c->path, '/');

	if (!p || !*p)
		return 0;
	if (p[0] == '/' || !slash)
		*ret = strdup(p);
	else if (asprintf(ret, "%.*s/%s", (int)(slash - c->path), c->path, p) < 0)
		*ret = NULL;
	return *ret ? 0 : -ENOMEM;
}

/* A *-data field: base64 (whitespace allowed) of PEM text, decoded into a string. */
static int dup_b64(struct ctx *c, const char *field, const char *s, char **ret)
{
	size_t n = 0;
	char *out;

	if (!s || !*s)
		return 0;
	out = vw_base64_decode(s, strlen(s), true, &n);
	if (!out && errno == ENOMEM)
		return -ENOMEM;
	if (!out)
		return fail(c, -EINVAL, "%s: not base64", field);
	if (!n || memchr(out, '\0', n) || !strstr(out, "-----BEGIN ")) {
		explicit_bzero(out, n);
		free(out);
		return fail(c, -EINVAL, "%s: not base64 of PEM text", field);
	}
	*ret = out;
	return 0;
}

static int resolve_cluster(struct ctx *c, const struct node *cl, struct vw_kubeconfig *k)
{
	const char *server = text(cl, "server"), *insecure = text(cl, "insecure-skip-tls-verify");
	int r;

	if (!server || !*server)
		return fail(c, -EINVAL, "cluster \"%s\" has no server", k->cluster);
	k->server = strdup(server);
	if (!k->server)
		return -ENOMEM;
	k->insecure = insecure && strcmp(insecure, "true") == 0;
	r = dup_path(c, text(cl, "certificate-authority"), &k->ca_file);
	if (r == 0)
		r = dup_b64(c, "certificate-authority-data", text(cl, "certificate-authority-data"),
			    &k->ca_pem);
	return r;
}

static int resolve_user(struct ctx *c, const struct node *u, struct vw_kubeconfig *k)
{
	int r = 0;

	if (get(u, "exec") || get(u, "auth-provider"))
		return fail(c, -EOPNOTSUPP,
			    "user \"%s\" authenticates with %s, which virtwatt does not run: give it "
			    "a token (a ServiceAccount's: kubectl create token), a tokenFile or a "
			    "client certificate",
			    k->user, get(u, "exec") ? "an exec plugin" : "an auth provider");
	if (text(u, "token") && !(k->token = strdup(text(u, "token"))))
		return -ENOMEM;
	if (r == 0)
		r = dup_path(c, text(u, "tokenFile"), &k->token_file);
	if (r == 0)
		r = dup_path(c, text(u, "client-certificate"), &k->cert_file);
	if (r == 0)
		r = dup_path(c, text(u, "client-key"), &k->key_file);
	if (r == 0)
		r = dup_b64(c, "client-certificate-data", text(u, "client-certificate-data"),
			    &k->cert_pem);
	if (r == 0)
		r = dup_b64(c, "client-key-data", text(u, "client-key-data"), &k->key_pem);
	if (r == 0 && !!(k->cert_file || k->cert_pem) != !!(k->key_file || k->key_pem))
		return fail(c, -EINVAL, "user \"%s\": a client certificate needs its key, and a key "
					"its certificate",
			    k->user);
	return r;
}

static int resolve(struct ctx *c, const struct node *root, struct vw_kubeconfig *k)
{
	const char *cur = text(root, "current-context");
	const struct node *ctx, *cl, *u;
	int r;

	if (!cur || !*cur)
		return fail(c, -EINVAL, "no current-context (kubectl config use-context NAME)");
	ctx = named(root, "contexts", cur, "context");
	if (!ctx)
		return fail(c, -EINVAL, "current-context \"%s\" is not in contexts", cur);
	k->context = strdup(cur);
	k->cluster = text(ctx, "cluster") ? strdup(text(ctx, "cluster")) : NULL;
	k->user = text(ctx, "user") ? strdup(text(ctx, "user")) : NULL;
	if (!k->context || !k->cluster)
		return k->context && !text(ctx, "cluster")
			       ? fail(c, -EINVAL, "context \"%s\" names no cluster", cur)
			       : -ENOMEM;
	cl = named(root, "clusters", k->cluster, "cluster");
	if (!cl)
		return fail(c, -EINVAL, "context \"%s\": no cluster \"%s\"", cur, k->cluster);
	r = resolve_cluster(c, cl, k);
	if (r < 0 || !k->user)
		return r; /* no user: requests go without credentials */
	u = named(root, "users", k->user, "user");
	if (!u)
		return fail(c, -EINVAL, "context \"%s\": no user \"%s\"", cur, k->user);
	return resolve_user(c, u, k);
}

/* The opened file (r: vw_yaml_open*'s result) into ret. */
static int parse_opened(struct vw_yaml *y, int r, const char *path, struct vw_kubeconfig *ret,
			char *err, size_t errlen)
{
	struct ctx c = { .path = path, .err = err, .errlen = errlen };
	struct node *root = NULL;

	if (r == 0)
		r = read_tree(y, &root);
	if (y->buf)
		explicit_bzero(y->buf, y->len); /* tokens, keys */
	vw_yaml_close(y);
	if (r == 0)
		r = resolve(&c, root, ret);
	node_free(root);
	if (r < 0)
		vw_kubeconfig_free(ret);
	return r;
}

int vw_kubeconfig_parse(const char *path, const char *buf, size_t len, struct vw_kubeconfig *ret,
			char *err, size_t errlen)
{
	struct vw_yaml y;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = vw_yaml_open_buf(&y, path, "kubeconfig", buf, len, KUBECONFIG_MAX_BYTES, err, errlen);
	return parse_opened(&y, r, path, ret, err, errlen);
}

int vw_kubeconfig_load(const char *path, struct vw_kubeconfig *ret, char *err, size_t errlen)
{
	struct vw_yaml y;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = vw_yaml_open(&y, path, "kubeconfig", KUBECONFIG_MAX_BYTES, err, errlen);
	return parse_opened(&y, r, path, ret, err, errlen);
}

static void free_secret(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

void vw_kubeconfig_free(struct vw_kubeconfig *k)
{
	free(k->context);
	free(k->cluster);
	free(k->user);
	free(k->server);
	free(k->ca_file);
	free(k->ca_pem);
	free_secret(k->token);
	free(k->token_file);
	free(k->cert_file);
	free(k->key_file);
	free(k->cert_pem);
	free_secret(k->key_pem);
	memset(k, 0, sizeof(*k));
}
