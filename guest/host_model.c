/* SPDX-License-Identifier: Apache-2.0 */
#include "host_model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "model.h"
#include "model_rx.h"
#include "power_source.h"
#include "proto.h"
#include "reader.h"

/* The body as a model the estimator can run; NULL (why in err) otherwise. */
static struct vw_model *usable(const struct vw_model_frame *f, char *err, size_t len)
{
	struct vw_power_env env = { .host_cores = 1 };
	struct vw_model *m = NULL;
	void *est = NULL;
	char origin[VW_GUEST_MODEL_NAME_MAX + 8];

	snprintf(origin, sizeof(origin), "host:%s", f->name);
	if (vw_model_parse(f->body, f->body_len, origin, &m, err, len) < 0)
		return NULL;
	env.model = m;
	env.model_origin = origin;
	if (vw_src_estimator.open(&env, &est) < 0) {
		snprintf(err, len, "no component the estimator can use");
		vw_model_free(m);
		return NULL;
	}
	vw_src_estimator.close(est);
	return m;
}

static void hand_over(struct vw_guest_host_model *h, struct vw_model *m, const char *name)
{
	vw_model_free(h->pending); /* a newer one before the source took it */
	h->pending = m;
	snprintf(h->pending_name, sizeof(h->pending_name), "%s", name);
	snprintf(h->name, sizeof(h->name), "%s", name);
}

/* The frame line kept at start: its hash checked again, then as any pushed model. */
static void load_kept(struct vw_guest_host_model *h)
{
	_cleanup_free_ struct vw_model_frame *f = calloc(1, sizeof(*f));
	char buf[VW_PROTO_MAX_FRAME + 1], err[256] = "";
	_cleanup_close_ int fd = -1;
	struct vw_model *m;
	size_t len = 0;

	fd = open(h->keep_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || !f)
		return; /* none kept yet */
	if (vw_read_fd(fd, buf, sizeof(buf), &len) < 0 || len < 2 || len > VW_PROTO_MAX_FRAME ||
	    buf[len - 1] != '\n' || vw_proto_decode_model(buf, len - 1, f) != VW_PROTO_OK ||
	    !(m = usable(f, err, sizeof(err)))) {
		vw_warn("model: %s does not hold a good model of the host's%s%s; ignored",
			h->keep_path, err[0] ? ": " : "", err);
		return;
	}
	hand_over(h, m, f->name);
	vw_info("model: the host's model %s, kept in %s, until the host sends one", f->name,
		h->keep_path);
}

int vw_guest_host_model_init(struct vw_guest_host_model *h, const char *keep_path)
{
	*h = (struct vw_guest_host_model){ 0 };
	if (keep_path && *keep_path) {
		if (asprintf(&h->keep_path, "%s.model", keep_path) < 0) {
			h->keep_path = NULL;
			return -ENOMEM;
		}
		load_kept(h);
	}
	return 0;
}

void vw_guest_host_model_done(struct vw_guest_host_model *h)
{
	vw_model_free(h->pending);
	free(h->keep_path);
	*h = (struct vw_guest_host_model){ 0 };
}

/* The accepted frame, as one line, beside the state file (atomically). */
static void keep(struct vw_guest_host_model *h, struct vw_model_frame *f)
{
	char buf[VW_PROTO_MAX_FRAME];
	size_t len;
	int r;

	if (!h->keep_path)
		return;
	r = vw_proto_encode_model(f, buf, sizeof(buf), &len);
	if (r == 0)
		r = vw_write_file_durable_at(AT_FDCWD, h->keep_path, buf, len, 0600);
	if (r < 0)
		vw_complain(&h->complaint, VW_LOG_WARN, "model: cannot keep the host's model in %s: %s",
			    h->keep_path, strerror(-r));
}

void vw_guest_host_model_poll(struct vw_guest_host_model *h, const struct vw_reader *r)
{
	const struct vw_model_rx *rx = r ? vw_reader_models(r) : NULL;
	struct vw_model *m;
	char err[256] = "";

	if (!rx || rx->gen == h->reader_gen || !rx->cur)
		return;
	h->reader_gen = rx->gen;
	m = usable(rx->cur, err, sizeof(err));
	if (!m) {
		h->refused_model++;
		vw_complain(&h->complaint, VW_LOG_WARN,
			    "model: the host's model %s is not usable (%s); keeping %s", rx->cur->name,
			    err, h->name[0] ? h->name : "the default for estimates");
		return;
	}
	hand_over(h, m, rx->cur->name);
	keep(h, rx->cur);
	vw_info("model: estimating with the host's model %s for this VM when passthrough stops",
		rx->cur->name);
}

static const char *const l_model[] = { "model", "node_name", NULL };
static const char *const l_reason[] = { "reason", "node_name", NULL };

static const struct vw_metric_family families[] = {
	{ "virtwatt_guest_host_model_info", VW_METRIC_GAUGE,
	  "The model this VM's host trained for it and pushed over the passthrough: the guest "
	  "estimates with it when passthrough stops (absent until one came)",
	  NULL, l_model },
	{ "virtwatt_guest_host_model_refused_total", VW_METRIC_COUNTER,
	  "Model frames from the host refused, by reason (integrity: body and hash differ; "
	  "model: the body is no usable model; uuid, seq, rate, oversize, syntax, ...); the last "
	  "good model stays",
	  NULL, l_reason },
};
const struct vw_family_table vw_guest_host_model_family_table = {
	"guest/host_model.c: vw_guest_host_model_render()", "virtwatt-guest",
	"with passthrough enabled", families, ARRAY_SIZE(families),
};

int vw_guest_host_model_render(const struct vw_guest_host_model *h, const struct vw_reader *r,
			       struct vw_prom_writer *w, const char *node_name)
{
	const struct vw_model_rx *rx = r ? vw_reader_models(r) : NULL;
	int ret;

	(void)vw_prom_table_trust(&vw_guest_host_model_family_table); /* checked once */
	if (!rx)
		return 0;
	ret = vw_prom_family(w, &families[0]);
	if (ret == 0 && h->name[0])
		ret = vw_prom_gauge(w, (const char *[]){ h->name, node_name, NULL }, 1);
	if (ret == 0)
		ret = vw_prom_family_end(w);
	if (ret == 0)
		ret = vw_prom_family(w, &families[1]);
	for (int e = 1; ret == 0 && e < VW_PROTO_E__COUNT; e++)
		if (rx->rejected[e])
			ret = vw_prom_counter(w,
					      (const char *[]){ vw_proto_error_name(e), node_name,
								NULL },
					      (double)rx->rejected[e]);
	if (ret == 0)
		ret = vw_prom_counter(w, (const char *[]){ "model", node_name, NULL },
				      (double)h->refused_model);
	return ret < 0 ? ret : vw_prom_family_end(w);
}
