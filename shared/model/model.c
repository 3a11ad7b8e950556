/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parser for Kepler model-server weight files, every era (docs/models.md). Strict: every type is
 * checked, every number must be finite and of a sane magnitude, unknown keys are refused, and a
 * failure leaves a one-line reason. One component's All_Weights is parsed in model_weights.c,
 * evaluation lives in model_eval.c.
 */
#include "model.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"
#include "model_priv.h"

#define MAX_DEPTH 12 /* a model nests 7 deep */
#define MAX_CORES 65536u

static const struct {
	const char *key;
	const char *name;
} component_keys[] = {
	{"package", "package"}, {"pkg", "package"}, {"core", "core"},
	{"uncore", "uncore"},   {"dram", "dram"},   {"platform", "platform"},
};

static const struct {
	const char *alias;
	const char *canonical;
} feature_aliases[] = {
	{"bpf_cpu_time_us", "bpf_cpu_time_ms"}, /* kepler #1214 renamed the key, same ms/s value */
	{"cpu_instr", "cpu_instructions"},
};

static const char *const meta_keys[] = {"model_name", "machine_spec", "mae"};

int vw_model_fail(struct vw_model_parse *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->err || p->errlen == 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(p->err, p->errlen, fmt, ap);
	va_end(ap);
	/* Keys come from the file: keep the reason on one printable line. */
	for (char *s = p->err; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			*s = '?';
	return -EINVAL;
}

int vw_model_oom(struct vw_model_parse *p)
{
	vw_model_fail(p, "out of memory");
	return -ENOMEM;
}

const char *vw_model_feature_canonical(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(feature_aliases); i++)
		if (strcmp(name, feature_aliases[i].alias) == 0)
			return feature_aliases[i].canonical;
	return name;
}

static bool is_meta_key(const char *key)
{
	for (size_t i = 0; i < ARRAY_SIZE(meta_keys); i++)
		if (strcmp(key, meta_keys[i]) == 0)
			return true;
	return false;
}

static const char *component_name(const char *key)
{
	for (size_t i = 0; i < ARRAY_SIZE(component_keys); i++)
		if (strcmp(key, component_keys[i].key) == 0)
			return component_keys[i].name;
	return NULL;
}

/* Feature names: [A-Za-z0-9_.:-]; category values: any printable ASCII. */
bool vw_model_name_ok(const char *s, bool printable)
{
	size_t n = strlen(s);

	if (n == 0 || n > VW_MODEL_MAX_NAME)
		return false;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		bool ok = printable ? (ch >= 0x20 && ch < 0x7f)
				    : (ch == '_' || ch == '.' || ch == ':' || ch == '-' ||
				       (ch >= '0' && ch <= '9') ||
				       ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z'));
		if (!ok)
			return false;
	}
	return true;
}

int vw_model_get_number(struct vw_model_parse *p, json_object *o, const char *what, double limit,
			double *ret)
{
	double v;

	if (!json_object_is_type(o, json_type_double) && !json_object_is_type(o, json_type_int))
		return vw_model_fail(p, "%s: expected a number, got %s", what,
				     json_type_to_name(json_object_get_type(o)));
	v = json_object_get_double(o);
	if (!isfinite(v))
		return vw_model_fail(p, "%s: not a finite number", what);
	if (fabs(v) > limit)
		return vw_model_fail(p, "%s: absurd magnitude %g (limit %g)", what, v, limit);
	*ret = v;
	return 0;
}

int vw_model_get_object(struct vw_model_parse *p, json_object *o, const char *what)
{
	if (!json_object_is_type(o, json_type_object))
		return vw_model_fail(p, "%s: expected an object, got %s", what,
				     json_type_to_name(json_object_get_type(o)));
	return 0;
}

/* ---- top level: model_name, mae, machine_spec ---- */

static int parse_machine_spec(struct vw_model_parse *p, json_object *spec)
{
	double cores;
	int r = vw_model_get_object(p, spec, "machine_spec");

	if (r < 0)
		return r;
	json_object_object_foreach (spec, key, val) {
		if (strcmp(key, "cores") == 0) {
			r = vw_model_get_number(p, val, "machine_spec.cores", MAX_CORES, &cores);
			if (r < 0)
				return r;
			if (cores < 1 || cores != floor(cores))
				return vw_model_fail(
					p, "machine_spec.cores: %g is not a positive integer",
					cores);
			p->m->spec_cores = (unsigned)cores;
		} else if (json_object_is_type(val, json_type_double) ||
			   json_object_is_type(val, json_type_int)) {
			double ignored;

			r = vw_model_get_number(p, val, "machine_spec value", VW_MODEL_MAX_SCALE,
						&ignored);
			if (r < 0)
				return r;
		} else if (!json_object_is_type(val, json_type_string)) {
			return vw_model_fail(p, "machine_spec.%.40s: expected a string or a number",
					     key);
		}
	}
	return 0;
}

static int parse_meta(struct vw_model_parse *p, json_object *root)
{
	json_object *v;
	int r;

	if (json_object_object_get_ex(root, "model_name", &v)) {
		if (!json_object_is_type(v, json_type_string) ||
		    !vw_model_name_ok(json_object_get_string(v), false))
			return vw_model_fail(p, "model_name: expected a name of [A-Za-z0-9_.:-]");
		p->m->name = strdup(json_object_get_string(v));
		if (!p->m->name)
			return vw_model_oom(p);
	}
	if (json_object_object_get_ex(root, "mae", &v)) {
		r = vw_model_get_number(p, v, "mae", VW_MODEL_MAX_COEF, &p->m->mae);
		if (r < 0)
			return r;
		if (p->m->mae < 0)
			return vw_model_fail(p, "mae: negative");
	}
	if (json_object_object_get_ex(root, "machine_spec", &v))
		return parse_machine_spec(p, v);
	return 0;
}

/* "SGDRegressorTrainer_0" -> "SGDRegressorTrainer" (a trailing _<digits> removed). */
static char *strip_index(const char *name, size_t len)
{
	size_t n = len;

	while (n > 0 && name[n - 1] >= '0' && name[n - 1] <= '9')
		n--;
	if (n < len && n > 1 && name[n - 1] == '_')
		len = n - 1;
	return strndup(name, len);
}

/*
 * The trainer named by an origin: the last '_'-separated token of the base name (without
 * query and ".json") that ends in "Trainer". Model-db URLs end ".../<Trainer>_<n>.json"; our
 * fixture names flatten the path with '_'. NULL if none.
 */
static char *trainer_from_origin(const char *origin)
{
	const char *base = strrchr(origin, '/') ? strrchr(origin, '/') + 1 : origin;
	size_t len = strcspn(base, "?#");
	const char *found = NULL;
	size_t found_len = 0;

	for (size_t i = 0; i < len;) {
		size_t n = strcspn(base + i, "_.?#");

		if (i + n > len)
			n = len - i;
		if (n >= 7 && strncmp(base + i + n - 7, "Trainer", 7) == 0) {
			found = base + i;
			found_len = n;
		}
		i += n + 1;
	}
	return found ? strndup(found, found_len) : NULL;
}

static int infer_identity(struct vw_model_parse *p, const char *origin)
{
	struct vw_model *m = p->m;
	const char *base;

	if (m->name)
		m->trainer = strip_index(m->name, strlen(m->name));
	else if (origin)
		m->trainer = trainer_from_origin(origin);
	if (!m->trainer)
		m->trainer = strdup("SGDRegressorTrainer");
	if (!m->name && m->trainer)
		m->name = strdup(m->trainer);
	if (!m->trainer || !m->name)
		return vw_model_oom(p);
	m->output = VW_MODEL_ABS_POWER;
	if (origin) {
		base = strrchr(origin, '/') ? strrchr(origin, '/') + 1 : origin;
		if (strstr(origin, "DynPower") || strstr(base, "Dyn"))
			m->output = VW_MODEL_DYN_POWER;
	}
	return 0;
}

/* A component object {"All_Weights": {...}}; the root of a total model also holds meta keys. */
static int parse_component(struct vw_model_parse *p, const char *name, json_object *obj,
			   bool is_root)
{
	struct vw_model *m = p->m;
	struct vw_model_comp *c;
	json_object *aw;
	int r;

	for (size_t i = 0; i < m->n_comps; i++)
		if (strcmp(m->comps[i].name, name) == 0)
			return vw_model_fail(p, "component %s given twice (pkg is package)", name);
	r = vw_model_get_object(p, obj, name);
	if (r < 0)
		return r;
	json_object_object_foreach (obj, key, val) {
		(void)val;
		if (strcmp(key, "All_Weights") != 0 && !(is_root && is_meta_key(key)))
			return vw_model_fail(p, "%s: unknown key '%.40s'", name, key);
	}
	if (!json_object_object_get_ex(obj, "All_Weights", &aw))
		return vw_model_fail(p, "%s: no All_Weights", name);
	c = &m->comps[m->n_comps++];
	c->name = name;
	c->kind = vw_model_kind_from_trainer(m->trainer);
	c->curve_term = VW_MODEL_NO_TERM;
	return vw_model_parse_weights(p, c, aw);
}

/* Say what a JSON that is not a model file looks like, for a useful error. */
static int refuse_non_model(struct vw_model_parse *p, json_object *root)
{
	bool all_node_types = json_object_object_length(root) > 0;

	if (json_object_object_get_ex(root, "model_class", NULL) ||
	    json_object_object_get_ex(root, "model_file", NULL) ||
	    json_object_object_get_ex(root, "features", NULL))
		return vw_model_fail(p,
				     "not a model: a model metadata.json (model_class, features), "
				     "not weights");
	json_object_object_foreach (root, key, val) {
		(void)key;
		if (!json_object_is_type(val, json_type_object) ||
		    !json_object_object_get_ex(val, "attrs", NULL))
			all_node_types = false;
	}
	if (all_node_types)
		return vw_model_fail(p,
				     "not a model: a node_type_index.json (node types with attrs), "
				     "not weights");
	return 0;
}

static int parse_components(struct vw_model_parse *p, json_object *root)
{
	int r;

	if (json_object_object_get_ex(root, "All_Weights", NULL))
		return parse_component(p, "total", root, true);
	json_object_object_foreach (root, key, val) {
		const char *name = component_name(key);

		if (is_meta_key(key))
			continue;
		if (!name)
			return vw_model_fail(p, "unknown top-level key '%.40s' (not a component)",
					     key);
		r = parse_component(p, name, val, false);
		if (r < 0)
			return r;
	}
	if (p->m->n_comps == 0)
		return vw_model_fail(p, "no component with All_Weights");
	return 0;
}

bool vw_model_term_used(const struct vw_model_comp *c, size_t t)
{
	if (c->terms[t].norm == VW_MODEL_NORM_SKIP)
		return false;
	if (c->kind == VW_MODEL_LINEAR)
		return c->terms[t].weight != 0;
	return t == c->curve_term && c->curve[0] != 0;
}

static int add_feature(struct vw_model_parse *p, const char *name)
{
	struct vw_model *m = p->m;
	char **f;

	for (size_t i = 0; i < m->n_features; i++)
		if (strcmp(m->features[i], name) == 0)
			return 0;
	f = realloc(m->features, (m->n_features + 1) * sizeof(*f));
	if (!f)
		return vw_model_oom(p);
	m->features = f;
	f[m->n_features] = strdup(name);
	if (!f[m->n_features])
		return vw_model_oom(p);
	m->n_features++;
	return 0;
}

/* Collect the features in use and warn about multiplied (x*scale) terms. */
static int finish(struct vw_model_parse *p)
{
	struct vw_model *m = p->m;
	const struct vw_model_term *odd = NULL;
	const char *odd_comp = NULL;
	int r;

	for (size_t i = 0; i < m->n_comps; i++) {
		for (size_t t = 0; t < m->comps[i].n_terms; t++) {
			if (!vw_model_term_used(&m->comps[i], t))
				continue;
			r = add_feature(p, m->comps[i].terms[t].name);
			if (r < 0)
				return r;
			if (!odd && m->comps[i].terms[t].norm == VW_MODEL_NORM_MUL_SCALE) {
				odd = &m->comps[i].terms[t];
				odd_comp = m->comps[i].name;
			}
		}
	}
	if (odd && asprintf(&m->warning,
			    "%s: feature %s has scale %g < 1 on a rate; evaluated as x*scale "
			    "(the nx12 LinearRegressionTrainer_1 anomaly), not x/scale",
			    odd_comp, odd->name, odd->scale) < 0) {
		m->warning = NULL;
		return vw_model_oom(p);
	}
	return 0;
}

static int parse_root(struct vw_model_parse *p, json_object *root, const char *origin)
{
	int r;

	if (!json_object_is_type(root, json_type_object))
		return vw_model_fail(p, "not a model: the top level is %s, not an object",
				     json_type_to_name(json_object_get_type(root)));
	r = refuse_non_model(p, root);
	if (r < 0)
		return r;
	r = parse_meta(p, root);
	if (r < 0)
		return r;
	r = infer_identity(p, origin);
	if (r < 0)
		return r;
	r = parse_components(p, root);
	if (r < 0)
		return r;
	return finish(p);
}

/*
 * More values than any model holds (5 components of 64 terms and 16 x 64 categorical levels
 * come to about 13,000), counted by their separators and openers outside strings: refused
 * before json-c builds a tree, each value of which costs 70+ bytes (a 4 MiB body of "0,"
 * built 2 million of them: 154 MB peak RSS in a release build).
 */
static bool too_many_values(const char *json, size_t len)
{
	size_t n = 0;
	bool in_str = false;

	for (size_t i = 0; i < len; i++) {
		char c = json[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		in_str = c == '"';
		n += c == ',' || c == '[' || c == '{';
		if (n > VW_MODEL_MAX_VALUES)
			return true;
	}
	return false;
}

/*
 * Parse the whole buffer as one JSON value. A value that may go on ("42", "null", or a cut-off
 * file) gets the end-of-input mark json-c expects, a NUL, to tell complete from truncated.
 */
static int tokenize(struct vw_model_parse *p, const char *json, size_t len, json_object **ret)
{
	struct json_tokener *tok = json_tokener_new_ex(MAX_DEPTH);
	enum json_tokener_error e;
	json_object *o;
	size_t end;

	if (!tok)
		return vw_model_oom(p);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, json, (int)len);
	e = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (e == json_tokener_continue) {
		o = json_tokener_parse_ex(tok, "", 1);
		e = json_tokener_get_error(tok);
		end = len;
		if (e != json_tokener_success)
			e = json_tokener_continue;
	}
	json_tokener_free(tok);
	if (e == json_tokener_continue)
		return vw_model_fail(p, "truncated JSON");
	if (e != json_tokener_success)
		return vw_model_fail(p, "invalid JSON at byte %zu: %s", end,
				     json_tokener_error_desc(e));
	while (end < len && json[end] != '\0' && strchr(" \t\r\n", json[end]))
		end++;
	if (end < len) {
		json_object_put(o);
		return vw_model_fail(p, "trailing data after the JSON value at byte %zu", end);
	}
	if (!o)
		return vw_model_fail(p, "not a model: the top level is null, not an object");
	*ret = o;
	return 0;
}

int vw_model_parse(const char *json, size_t len, const char *origin, struct vw_model **ret,
		   char *err, size_t errlen)
{
	struct vw_model_parse p = {.err = err, .errlen = errlen};
	json_object *root = NULL;
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (!json || len == 0)
		return vw_model_fail(&p, "empty input");
	if (len > VW_MODEL_MAX_BYTES)
		return vw_model_fail(&p, "too large: %zu bytes (limit %u)", len,
				     VW_MODEL_MAX_BYTES);
	if (too_many_values(json, len))
		return vw_model_fail(&p, "more than %u values: not a model", VW_MODEL_MAX_VALUES);
	r = tokenize(&p, json, len, &root);
	if (r < 0)
		return r;
	p.m = calloc(1, sizeof(*p.m));
	if (!p.m) {
		json_object_put(root);
		return vw_model_oom(&p);
	}
	p.m->mae = NAN;
	r = parse_root(&p, root, origin);
	json_object_put(root);
	if (r < 0) {
		vw_model_free(p.m);
		return r;
	}
	*ret = p.m;
	return 0;
}

/* rel below dirfd read (a regular file only, when regular) and parsed. */
static int load_at(int dirfd, const char *rel, const char *origin, bool regular,
		   struct vw_model **ret, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = malloc(VW_MODEL_MAX_BYTES + 1);
	size_t len;
	int r;

	if (!buf)
		return -ENOMEM;
	r = regular ? vw_read_file_regular_at(dirfd, rel, buf, VW_MODEL_MAX_BYTES + 1, &len)
		    : vw_read_file_at(dirfd, rel, buf, VW_MODEL_MAX_BYTES + 1, &len);
	if (r < 0) {
		if (err && errlen)
			snprintf(err, errlen, "cannot read %s: %s", rel,
				 r == -EFBIG		   ? "larger than 4 MiB"
				 : regular && r == -EINVAL ? "not a regular file"
							   : strerror(-r));
		return r;
	}
	return vw_model_parse(buf, len, origin, ret, err, errlen);
}

int vw_model_load_file_at(int dirfd, const char *rel, const char *origin, struct vw_model **ret,
			  char *err, size_t errlen)
{
	return load_at(dirfd, rel, origin, true, ret, err, errlen);
}

int vw_model_load_file(const char *path, struct vw_model **ret, char *err, size_t errlen)
{
	return load_at(AT_FDCWD, path, path, false, ret, err, errlen);
}

static void comp_free(struct vw_model_comp *c)
{
	for (size_t i = 0; i < c->n_terms; i++)
		free(c->terms[i].name);
	for (size_t i = 0; i < c->n_cats; i++) {
		for (size_t j = 0; j < c->cats[i].n_levels; j++)
			free(c->cats[i].levels[j].value);
		free(c->cats[i].levels);
		free(c->cats[i].name);
	}
	free(c->terms);
	free(c->cats);
}

void vw_model_free(struct vw_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_comps; i++)
		comp_free(&m->comps[i]);
	for (size_t i = 0; i < m->n_features; i++)
		free(m->features[i]);
	free(m->features);
	free(m->name);
	free(m->trainer);
	free(m->warning);
	free(m);
}
