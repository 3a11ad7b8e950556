/* SPDX-License-Identifier: Apache-2.0 */
#include "model_rx.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include "macro.h"

int vw_model_rx_init(struct vw_model_rx *m)
{
	*m = (struct vw_model_rx){ .scratch = calloc(1, sizeof(*m->scratch)) };
	return m->scratch ? 0 : -ENOMEM;
}

void vw_model_rx_done(struct vw_model_rx *m)
{
	free(m->cur);
	free(m->scratch);
	*m = (struct vw_model_rx){ 0 };
}

static enum vw_proto_error judge(const struct vw_model_rx *m, const struct vw_model_frame *f,
				 const char *expect_uuid, uint64_t now_ns)
{
	if (!expect_uuid[0] || strcasecmp(f->vm_uuid, expect_uuid) != 0)
		return VW_PROTO_E_UUID;
	if (!m->cur)
		return VW_PROTO_OK;
	if (f->epoch == m->cur->epoch && f->mseq <= m->cur->mseq)
		return VW_PROTO_E_SEQ;
	if (now_ns - m->last_change_ns < VW_MODEL_RX_MIN_CHANGE_NS)
		return VW_PROTO_E_RATE;
	return VW_PROTO_OK;
}

enum vw_proto_error vw_model_rx_line(struct vw_model_rx *m, const char *expect_uuid,
				     const char *line, size_t len, uint64_t now_ns)
{
	struct vw_model_frame *f = m->scratch;
	enum vw_proto_error e = f ? vw_proto_decode_model(line, len, f) : VW_PROTO_E_SYNTAX;

	if (e == VW_PROTO_OK && m->cur && strcmp(f->sha256, m->cur->sha256) == 0 &&
	    strcasecmp(f->vm_uuid, m->cur->vm_uuid) == 0) {
		m->unchanged++; /* a resend: the host repeats its model for guests that (re)connect */
		return VW_PROTO_OK;
	}
	if (e == VW_PROTO_OK)
		e = judge(m, f, expect_uuid, now_ns);
	if (e != VW_PROTO_OK) {
		m->rejected[e]++;
		return e;
	}
	m->scratch = m->cur ? m->cur : calloc(1, sizeof(*m->scratch));
	m->cur = f;
	m->gen++;
	m->accepted++;
	m->last_change_ns = now_ns; /* no scratch (no memory): refused as syntax until there is */
	return VW_PROTO_OK;
}
