/* SPDX-License-Identifier: Apache-2.0 */
/* The host's continuous training: intervals to samples, the refit schedule, files (training.h). */
#include "training.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "model_online.h"
#include "training_priv.h"

#define NODE_ID "node"
#define VM_PREFIX "vm-" /* a VM's id in the store: also its file's name */
#define FOLDS 5         /* held-out score: 5 contiguous blocks of the intervals */

struct vw_host_training {
	struct vw_host_train_options o;
	struct vw_online *store; /* NULL until the first interval, or when nothing is measured */
	bool started;            /* the first interval has been seen */
	enum vw_zone zone[VW_ONLINE_MAX_ZONES]; /* the store's zones */
	const char *zone_name[VW_ONLINE_MAX_ZONES];
	size_t n_zones;
	int dir_fd;       /* --model.train.dir, -1: no files */
	bool rounds;      /* the first refit round has run */
	uint64_t n_rounds, rounds_told; /* refit rounds run; of them, handed to vm_models() */
	uint64_t next_ns; /* the next round */
	struct vw_complaint cap_complaint, file_complaint, fit_complaint;
};

int vw_host_training_new(const struct vw_host_train_options *o, struct vw_host_training **ret)
{
	struct vw_host_training *t;

	*ret = NULL;
	if (o->interval_ns == 0) {
		vw_info("model: --model.train.interval=0: no training");
		return 0;
	}
	if (o->min_samples > o->max_samples) {
		vw_error("config: --model.train.min-samples (%llu) is more than "
			 "--model.train.max-samples (%llu) keeps",
			 (unsigned long long)o->min_samples, (unsigned long long)o->max_samples);
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->o = *o;
	t->dir_fd = -1;
	if (o->dir && *o->dir) {
		t->dir_fd = vw_dir_create_open(o->dir);
		if (t->dir_fd < 0) {
			int r = t->dir_fd;

			vw_error("config: --model.train.dir %s cannot be created or opened: %s", o->dir,
				 strerror(-r));
			free(t);
			return r;
		}
	}
	vw_info("model: training every %.0f s the node's model and up to %llu VMs', each on its "
		"latest %llu intervals; files: %s",
		(double)o->interval_ns / 1e9, (unsigned long long)o->max_vms,
		(unsigned long long)o->max_samples, t->dir_fd >= 0 ? o->dir : "none");
	*ret = t;
	return 0;
}

void vw_host_training_free(struct vw_host_training *t)
{
	if (!t)
		return;
	vw_online_free(t->store);
	if (t->dir_fd >= 0)
		close(t->dir_fd);
	free(t);
}

/* The zones a model can have (Kepler's components: no psys) whose every socket is measured. */
static void pick_zones(struct vw_host_training *t, const struct vw_host_train_zone *zones,
		       size_t n)
{
	bool seen[VW_ZONE__COUNT] = { false }, modelled[VW_ZONE__COUNT] = { false };

	for (size_t i = 0; i < n; i++) {
		seen[zones[i].view->zone] = true;
		modelled[zones[i].view->zone] |= !zones[i].measured;
	}
	for (int k = 0; k < VW_ZONE__COUNT && t->n_zones < VW_ONLINE_MAX_ZONES; k++) {
		if (!seen[k] || modelled[k] || k == VW_ZONE_PSYS)
			continue;
		t->zone[t->n_zones] = (enum vw_zone)k;
		t->zone_name[t->n_zones++] = vw_zone_name((enum vw_zone)k);
	}
}

static void start(struct vw_host_training *t, const struct vw_host_train_zone *zones, size_t n)
{
	struct vw_online_opts so = { .zones = t->zone_name,
				     .max_samples = (size_t)t->o.max_samples,
				     .max_targets = 1 + (size_t)t->o.max_vms,
				     .min_samples = (size_t)t->o.min_samples,
				     .folds = FOLDS,
				     .train = { .kind = VW_TRAIN_LINEAR } };

	t->started = true;
	pick_zones(t, zones, n);
	if (t->n_zones == 0) {
		vw_info("model: no zone is measured here (its power is a model's): nothing to train");
		return;
	}
	so.n_zones = t->n_zones;
	t->store = vw_online_new(&so);
	if (!t->store)
		vw_warn("model: cannot start training: %s", strerror(errno));
}

/* The node's counters: each zone's energy and faults summed over its sockets, CPU busy time. */
static void node_counters(const struct vw_host_training *t, uint64_t now_ns,
			  const struct vw_cpu_stat *stat, const struct vw_host_train_zone *zones,
			  size_t n, struct vw_online_counters *c)
{
	static const struct vw_cpu_stat zero;
	long hz = sysconf(_SC_CLK_TCK);

	*c = (struct vw_online_counters){ .now_ns = now_ns };
	c->cpu_ns = vw_cpu_stat_busy_delta(&zero, stat) * (VW_NSEC_PER_SEC / (hz > 0 ? hz : 100));
	for (size_t z = 0; z < t->n_zones; z++)
		for (size_t i = 0; i < n; i++) {
			const struct vw_node_zone_view *v = zones[i].view;

			if (v->zone != t->zone[z])
				continue;
			c->present[z] = true;
			c->energy_uj[z] += v->total_uj;
			c->faults[z] += v->gaps + v->read_errors;
		}
}

/* A VM's counters: its idle and active energy per zone, its CPU time; the node's faults (its
 * share of a wrong interval is wrong too). */
static void vm_counters(const struct vw_host_training *t, const struct vw_group_energy *g,
			const struct vw_online_counters *node, struct vw_online_counters *c)
{
	*c = (struct vw_online_counters){ .now_ns = node->now_ns, .cpu_ns = g->cpu_ns };
	for (size_t z = 0; z < t->n_zones; z++) {
		c->faults[z] = node->faults[z];
		for (size_t k = 0; k < g->n_zones; k++)
			if (g->zones[k].zone == t->zone[z]) {
				c->present[z] = node->present[z];
				c->energy_uj[z] = g->total_uj[k];
			}
	}
}

static bool listed(const struct vw_group_energy *ge, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strncmp(id, VM_PREFIX, strlen(VM_PREFIX)) == 0 &&
		    strcmp(id + strlen(VM_PREFIX), ge[i].id) == 0)
			return true;
	return false;
}

/* VMs that are gone are forgotten (their files stay). */
static void forget_gone(struct vw_host_training *t, const struct vw_group_energy *ge, size_t n)
{
	for (size_t i = vw_online_n_targets(t->store); i-- > 0;) {
		const char *id = vw_online_id(t->store, i);

		if (strcmp(id, NODE_ID) != 0 && !listed(ge, n, id))
			vw_online_remove(t->store, i);
	}
}

static void observe_vms(struct vw_host_training *t, const struct vw_online_counters *node,
			const struct vw_workloads *w)
{
	_cleanup_free_ struct vw_group_energy *ge = NULL;
	size_t n = 0, refused = 0;

	if (w && t->o.max_vms > 0) {
		size_t max = vw_workloads_n_groups(w);

		ge = calloc(max + 1, sizeof(*ge));
		if (!ge)
			return;
		n = vw_workloads_group_energy(w, ge, max);
	}
	forget_gone(t, ge, n);
	for (size_t i = 0; i < n; i++) {
		struct vw_online_counters c;
		char id[VW_ONLINE_ID_MAX];
		size_t k;
		int r;

		snprintf(id, sizeof(id), VM_PREFIX "%s", ge[i].id);
		r = vw_online_target(t->store, id, &k);
		refused += r == -ENOSPC;
		if (r < 0)
			continue;
		vw_online_set_label(t->store, k, ge[i].name);
		vm_counters(t, &ge[i], node, &c);
		(void)vw_online_observe(t->store, k, &c);
	}
	if (refused)
		vw_complain(&t->cap_complaint, VW_LOG_WARN,
			    "model: %zu VMs beyond --model.train.max-vms=%llu are not trained",
			    refused, (unsigned long long)t->o.max_vms);
	else
		vw_release(&t->cap_complaint, VW_LOG_INFO, "model: every VM is trained again");
}

/* A store id as a file name: DIR/<id>.json, nothing that could leave DIR. */
static bool file_name_ok(const char *id)
{
	return id[0] != '.' &&
	       strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
		       strlen(id);
}

static void write_model(struct vw_host_training *t, size_t i)
{
	_cleanup_free_ char *json = NULL;
	const char *id = vw_online_id(t->store, i);
	char name[VW_ONLINE_ID_MAX + 8];
	int r = file_name_ok(id) ? 0 : -EINVAL;

	snprintf(name, sizeof(name), "%s.json", id);
	if (r == 0)
		r = vw_online_to_json(t->store, i, &json);
	if (r == 0)
		r = vw_write_file_atomic_at(t->dir_fd, name, json, strlen(json), 0644);
	if (r < 0)
		vw_complain(&t->file_complaint, VW_LOG_WARN, "model: writing %s/%s: %s", t->o.dir,
			    name, r == -EINVAL ? "not a file name" : strerror(-r));
	else
		vw_release(&t->file_complaint, VW_LOG_INFO, "model: writing to %s works again",
			   t->o.dir);
}

static double unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every target with enough intervals (or a model already) is refitted and its file written. */
static void refit_round(struct vw_host_training *t)
{
	double now = unix_now();

	for (size_t i = 0; i < vw_online_n_targets(t->store); i++) {
		bool fitted = false;
		int r;

		for (size_t z = 0; z < t->n_zones; z++)
			fitted |= vw_online_zone_fit(t->store, i, z)->valid;
		if (!fitted && vw_online_n_samples(t->store, i) < t->o.min_samples)
			continue; /* too young to say anything of */
		r = vw_online_refit(t->store, i, now);
		if (r < 0)
			vw_complain(&t->fit_complaint, VW_LOG_WARN, "model: refitting %s: %s",
				    vw_online_id(t->store, i), strerror(-r));
		vw_debug("model: %s: %d of %zu zones refitted from %zu intervals",
			 vw_online_id(t->store, i), r, t->n_zones, vw_online_n_samples(t->store, i));
		if (r > 0 && t->dir_fd >= 0)
			write_model(t, i);
	}
}

/* "package R² 0.981, MAE 0.66 W; dram ..." for the log. */
static void describe_fits(const struct vw_host_training *t, size_t i, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t z = 0; z < t->n_zones && n < len; z++) {
		const struct vw_online_fit *f = vw_online_zone_fit(t->store, i, z);

		if (f->valid)
			n += (size_t)snprintf(buf + n, len - n, "%s%s R² %.3f, MAE %.2f W",
					      n ? "; " : "", t->zone_name[z], f->score.r2,
					      f->score.mae_w);
	}
}

/* The first round once the node has enough intervals, then one every interval. */
static void refit_due(struct vw_host_training *t, uint64_t now_ns, size_t node)
{
	bool first = !t->rounds;
	char fits[256];

	if (first && vw_online_n_samples(t->store, node) < t->o.min_samples)
		return;
	if (!first && now_ns < t->next_ns)
		return;
	t->rounds = true;
	t->next_ns = now_ns + t->o.interval_ns;
	refit_round(t);
	t->n_rounds++;
	describe_fits(t, node, fits, sizeof(fits));
	vw_log(first ? VW_LOG_INFO : VW_LOG_DEBUG, "model: the node's model on %zu intervals: %s",
	       vw_online_n_samples(t->store, node), fits[0] ? fits : "no zone fitted");
}

void vw_host_training_interval(struct vw_host_training *t, uint64_t now_ns,
			       const struct vw_cpu_stat *stat, const struct vw_host_train_zone *zones,
			       size_t n_zones, const struct vw_workloads *w)
{
	struct vw_online_counters node;
	size_t k;

	if (!t)
		return;
	if (!t->started)
		start(t, zones, n_zones);
	if (!t->store || vw_online_target(t->store, NODE_ID, &k) < 0)
		return;
	node_counters(t, now_ns, stat, zones, n_zones, &node);
	(void)vw_online_observe(t->store, k, &node);
	observe_vms(t, &node, w);
	if (vw_online_target(t->store, NODE_ID, &k) == 0) /* its index may have moved */
		refit_due(t, now_ns, k);
}

int vw_host_training_render(const struct vw_host_training *t, struct vw_prom_writer *w,
			    const char *node_name)
{
	return t && t->store ? vw_host_training_write_fits(t->store, w, node_name) : 0;
}

bool vw_host_training_vm_models(struct vw_host_training *t, vw_host_vm_model_fn fn, void *ud)
{
	char name[64];

	if (!t || !t->store || t->rounds_told == t->n_rounds)
		return false;
	t->rounds_told = t->n_rounds;
	snprintf(name, sizeof(name), "vm-linear-r%" PRIu64, t->n_rounds);
	for (size_t i = 0; i < vw_online_n_targets(t->store); i++) {
		const char *id = vw_online_id(t->store, i);
		_cleanup_free_ char *json = NULL;

		if (strncmp(id, VM_PREFIX, strlen(VM_PREFIX)) != 0 ||
		    vw_online_to_json(t->store, i, &json) < 0)
			continue; /* the node's, or no zone fitted yet */
		fn(ud, id + strlen(VM_PREFIX), name, json, strlen(json));
	}
	return true;
}
