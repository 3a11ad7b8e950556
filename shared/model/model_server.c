/* SPDX-License-Identifier: Apache-2.0 */
#include "model_server.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "model_priv.h"
#include "procfs.h"

void vw_machine_spec_normalise(const char *model_name, char *buf, size_t size)
{
	size_t n = 0;
	bool sep = false;

	if (!size)
		return;
	for (const char *p = model_name; *p && n + 1 < size; p++) {
		unsigned char c = (unsigned char)*p;

		if (isalnum(c)) {
			if (sep && n > 0 && n + 2 < size)
				buf[n++] = '_';
			sep = false;
			buf[n++] = (char)tolower(c);
		} else {
			sep = true;
		}
	}
	buf[n] = '\0';
}

/* "cpu MHz\t\t: 2500.000" of the first CPU. */
static unsigned cpuinfo_mhz(const char *text)
{
	const char *p = strstr(text, "cpu MHz");
	const char *colon = p ? strchr(p, ':') : NULL;
	double mhz;

	if (!colon || sscanf(colon + 1, "%lf", &mhz) != 1 || !(mhz > 0 && mhz < 1e6))
		return 0;
	return (unsigned)(mhz + 0.5);
}

static unsigned meminfo_gb(const char *text)
{
	uint64_t kb;

	if (vw_procfs_field_u64(text, "MemTotal", &kb, NULL) < 0)
		return 0;
	return (unsigned)((kb + (1ULL << 19)) >> 20);
}

int vw_machine_spec_parse(const char *cpuinfo, const char *meminfo, struct vw_machine_spec *ret)
{
	_cleanup_free_ struct vw_cpu_info *cpus = NULL;
	char phys[64][16];
	size_t n = 0, n_phys = 0, n_cores = 0;
	int r;

	*ret = (struct vw_machine_spec){ .chips = 1, .threads_per_core = 1 };
	ret->frequency_mhz = cpuinfo_mhz(cpuinfo);
	r = vw_procfs_parse_cpuinfo(cpuinfo, &cpus, &n);
	if (r < 0)
		return r;
	ret->cores = (unsigned)n;
	if (n) {
		vw_machine_spec_normalise(cpus[0].vendor_id, ret->vendor, sizeof(ret->vendor));
		if (strstr(ret->vendor, "intel"))
			snprintf(ret->vendor, sizeof(ret->vendor), "intel");
		else if (strstr(ret->vendor, "amd"))
			snprintf(ret->vendor, sizeof(ret->vendor), "amd");
		vw_machine_spec_normalise(cpus[0].model_name, ret->processor,
					  sizeof(ret->processor));
	}
	for (size_t i = 0; i < n; i++) {
		bool seen = false;

		for (size_t j = 0; j < n_phys && !seen; j++)
			seen = strcmp(phys[j], cpus[i].physical_id) == 0;
		if (!seen && n_phys < ARRAY_SIZE(phys))
			snprintf(phys[n_phys++], sizeof(phys[0]), "%s", cpus[i].physical_id);
		/* distinct (physical id, core id) pairs are physical cores */
		seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(cpus[j].physical_id, cpus[i].physical_id) == 0 &&
			       strcmp(cpus[j].core_id, cpus[i].core_id) == 0;
		if (!seen)
			n_cores++;
	}
	ret->chips = n_phys ? (unsigned)n_phys : 1;
	if (n_cores && n % n_cores == 0)
		ret->threads_per_core = (unsigned)(n / n_cores);
	if (meminfo)
		ret->memory_gb = meminfo_gb(meminfo);
	return 0;
}

int vw_machine_spec_read(int procfs_fd, struct vw_machine_spec *ret)
{
	_cleanup_free_ char *cpuinfo = malloc(1 << 20);
	char meminfo[4096]; /* MemTotal is its first line */
	int r;

	*ret = (struct vw_machine_spec){ .chips = 1, .threads_per_core = 1 };
	if (!cpuinfo)
		return -ENOMEM;
	r = vw_read_file_at(procfs_fd, "cpuinfo", cpuinfo, 1 << 20, NULL);
	if (r < 0)
		return r;
	if (vw_read_prefix_at(procfs_fd, "meminfo", meminfo, sizeof(meminfo), NULL) < 0)
		meminfo[0] = '\0';
	return vw_machine_spec_parse(cpuinfo, meminfo, ret);
}

char *vw_model_server_request(const struct vw_model_server_opts *o,
			      const struct vw_machine_spec *spec)
{
	struct json_object *req = json_object_new_object(), *spec_o = json_object_new_object(),
			   *metrics = json_object_new_array();
	char *out = NULL;

	if (!req || !spec_o || !metrics)
		goto done;
	json_object_array_add(metrics, json_object_new_string("bpf_cpu_time_ms"));
	json_object_object_add(req, "metrics", VW_TAKE_PTR(metrics));
	json_object_object_add(req, "output_type",
			       json_object_new_string(o->output_type ? o->output_type : "AbsPower"));
	json_object_object_add(req, "source",
			       json_object_new_string(o->source ? o->source : "rapl-sysfs"));
	json_object_object_add(req, "node_type", json_object_new_int(-1));
	json_object_object_add(req, "weight", json_object_new_boolean(1));
	json_object_object_add(req, "filter", json_object_new_string(""));
	json_object_object_add(req, "trainer_name", json_object_new_string(""));
	json_object_object_add(spec_o, "vendor", json_object_new_string(spec->vendor));
	json_object_object_add(spec_o, "processor", json_object_new_string(spec->processor));
	json_object_object_add(spec_o, "cores", json_object_new_int((int)spec->cores));
	json_object_object_add(spec_o, "chips", json_object_new_int((int)spec->chips));
	json_object_object_add(spec_o, "memory", json_object_new_int((int)spec->memory_gb));
	json_object_object_add(spec_o, "frequency", json_object_new_int((int)spec->frequency_mhz));
	json_object_object_add(spec_o, "threads_per_core",
			       json_object_new_int((int)spec->threads_per_core));
	json_object_object_add(req, "machine_spec", VW_TAKE_PTR(spec_o));
	out = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
done:
	json_object_put(metrics);
	json_object_put(spec_o);
	json_object_put(req);
	return out;
}

int vw_model_server_fetch(const struct vw_model_server_opts *o, const struct vw_machine_spec *spec,
			  struct vw_model **ret, char *err, size_t errlen)
{
	_cleanup_free_ char *body = vw_model_server_request(o, spec), *url = NULL, *answer = NULL;
	char why[256] = "", origin[600];
	size_t base_len, len = 0;
	int r;

	if (!o->url || !*o->url) {
		snprintf(err, errlen, "no model server URL");
		return -EINVAL;
	}
	if (strncmp(o->url, "http://", 7) != 0 && strncmp(o->url, "https://", 8) != 0) {
		snprintf(err, errlen, "model server %s: not an http(s) URL", o->url);
		return -EINVAL;
	}
	if (!body)
		return -ENOMEM;
	base_len = strlen(o->url);
	while (base_len && o->url[base_len - 1] == '/')
		base_len--;
	if (asprintf(&url, "%.*s/model", (int)base_len, o->url) < 0) {
		url = NULL;
		return -ENOMEM;
	}
	r = vw_model_http_fetch(url, body, o->timeout_ms, &answer, &len, why, sizeof(why));
	if (r < 0) {
		snprintf(err, errlen, "model server %s: %s", url, why);
		return r;
	}
	snprintf(origin, sizeof(origin), "server:%s", url);
	r = vw_model_parse(answer, len, origin, ret, why, sizeof(why));
	if (r < 0) {
		snprintf(err, errlen, "model server %s: the answer is not a model: %s", url, why);
		return r;
	}
	return 0;
}
