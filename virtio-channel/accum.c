/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Acceptance (PROTOCOL.md §3) and the guest's monotonic totals. Every bound compares energy in
 * µJ with a power ceiling times an elapsed time, in doubles: only the comparison matters.
 */
#include "accum.h"

#include <string.h>
#include <strings.h>

#include "macro.h"

/* ---- helpers ---- */

static uint64_t sub_floor(uint64_t cur, uint64_t prev)
{
	return cur >= prev ? cur - prev : 0;
}

static const struct vw_proto_zone *find_zone(const struct vw_host_frame *f, enum vw_zone zone)
{
	for (size_t i = 0; i < f->n_zones; i++)
		if (f->zones[i].zone == zone)
			return &f->zones[i];
	return NULL;
}

static bool zone_ok(const struct vw_proto_zone *z)
{
	return (unsigned)z->zone < VW_ZONE__WIRE_COUNT;
}

static double zone_watts(const struct vw_proto_zone *z)
{
	return z->idle_w + z->active_w;
}

static double max3(double a, double b, double c)
{
	return VW_MAX(VW_MAX(a, b), c);
}

/* Seconds from a base (received at base_ns, sequence base_seq) to f, received at now_ns: the
 * guest's clock, or the host's rounds if more (frames read in a burst arrive together). */
static double elapsed_s(const struct vw_host_frame *f, uint64_t now_ns, uint64_t base_ns,
			uint64_t base_seq)
{
	double clock = now_ns > base_ns ? (double)(now_ns - base_ns) / 1e9 : 0;
	double rounds = f->seq > base_seq
				? (double)(f->seq - base_seq) * (double)f->interval_ms / 1e3
				: 0;

	return VW_MAX(clock, rounds);
}

static double spike_ceiling_w(const struct vw_proto_rx *rx, double w_prev, double w_cur)
{
	if (rx->max_watts > 0)
		return rx->max_watts;
	return VW_MIN(VW_PROTO_SPIKE_FACTOR * max3(w_prev, w_cur, VW_PROTO_SPIKE_FLOOR_W),
		      VW_PROTO_SPIKE_MAX_W);
}

static double restart_ceiling_w(const struct vw_proto_rx *rx, double w_prev, double w_cur)
{
	double w = VW_PROTO_RESTART_FACTOR * max3(w_prev, w_cur, VW_PROTO_RESTART_FLOOR_W);

	return VW_MIN(w, spike_ceiling_w(rx, w_prev, w_cur));
}

/* More energy than ceiling_w over seconds? */
static bool exceeds(uint64_t uj, double ceiling_w, double seconds)
{
	return (double)uj > ceiling_w * seconds * 1e6;
}

static bool energy_fell(const struct vw_host_frame *prev, const struct vw_host_frame *f)
{
	for (size_t i = 0; i < f->n_zones; i++) {
		const struct vw_proto_zone *p = find_zone(prev, f->zones[i].zone);

		if (p && (f->zones[i].idle_uj < p->idle_uj || f->zones[i].active_uj < p->active_uj))
			return true;
	}
	return false;
}

/* ---- the rules ---- */

/* Within the epoch: does some zone rise faster than any VM can draw since its values stood? */
static bool spike_in_epoch(const struct vw_proto_rx *rx, const struct vw_host_frame *f,
			   uint64_t now_ns)
{
	for (size_t i = 0; i < f->n_zones; i++) {
		const struct vw_proto_zone *z = &f->zones[i];
		const struct vw_proto_rx_zone *s;
		uint64_t de;

		if (!zone_ok(z) || !(s = &rx->zones[z->zone])->seen)
			continue; /* a zone new to the epoch has no base */
		de = vw_add_sat(sub_floor(z->idle_uj, s->idle_uj),
			     sub_floor(z->active_uj, s->active_uj));
		if (exceeds(de, spike_ceiling_w(rx, s->watts, zone_watts(z)),
			    elapsed_s(f, now_ns, s->since_ns, s->since_seq)))
			return true;
	}
	return false;
}

/* Does f continue plausibly from base (received at base_ns): later, no fall, no spike? */
static bool continues(const struct vw_proto_rx *rx, const struct vw_host_frame *base,
		      uint64_t base_ns, const struct vw_host_frame *f, uint64_t now_ns)
{
	double s = elapsed_s(f, now_ns, base_ns, base->seq);

	if (f->epoch != base->epoch || f->seq <= base->seq || energy_fell(base, f))
		return false;
	for (size_t i = 0; i < f->n_zones; i++) {
		const struct vw_proto_zone *z = &f->zones[i], *b = find_zone(base, z->zone);

		if (b && exceeds(vw_add_sat(z->idle_uj - b->idle_uj, z->active_uj - b->active_uj),
				 spike_ceiling_w(rx, zone_watts(b), zone_watts(z)), s))
			return false;
	}
	return true;
}

/*
 * Can f's epoch have begun after the current epoch's last frame? Its cumulative energy must fit
 * in the time since then plus one interval (the restarted host may have counted a little
 * before that frame reached us).
 */
static bool restart_plausible(const struct vw_proto_rx *rx, const struct vw_host_frame *f,
			      uint64_t now_ns)
{
	double s = (now_ns > rx->last_ns ? (double)(now_ns - rx->last_ns) / 1e9 : 0) +
		   (double)VW_MAX(rx->last.interval_ms, f->interval_ms) / 1e3;

	for (size_t i = 0; i < f->n_zones; i++) {
		const struct vw_proto_zone *z = &f->zones[i];
		double w_prev = zone_ok(z) && rx->zones[z->zone].seen ? rx->zones[z->zone].watts : 0;

		if (exceeds(vw_add_sat(z->idle_uj, z->active_uj),
			    restart_ceiling_w(rx, w_prev, zone_watts(z)), s))
			return false;
	}
	return true;
}

/* ---- epochs other than the current one ---- */

static struct vw_proto_epoch_seen *known_find(struct vw_proto_rx *rx, uint64_t epoch)
{
	for (size_t i = 0; i < rx->n_known; i++)
		if (rx->known[i].epoch == epoch)
			return &rx->known[i];
	return NULL;
}

static void known_forget(struct vw_proto_rx *rx, uint64_t epoch)
{
	struct vw_proto_epoch_seen *k = known_find(rx, epoch);

	if (!k)
		return;
	memmove(k, k + 1, (size_t)(rx->known + rx->n_known - (k + 1)) * sizeof(*k));
	rx->n_known--;
}

/* Remember an epoch at seq; the oldest one goes when the set is full. */
static void known_note(struct vw_proto_rx *rx, uint64_t epoch, uint64_t seq)
{
	struct vw_proto_epoch_seen *k = known_find(rx, epoch);

	if (k) {
		k->seq = VW_MAX(k->seq, seq);
		return;
	}
	if (rx->n_known == VW_PROTO_KNOWN_EPOCHS) {
		memmove(rx->known, rx->known + 1, (rx->n_known - 1) * sizeof(rx->known[0]));
		rx->n_known--;
	}
	rx->known[rx->n_known++] = (struct vw_proto_epoch_seen){ .epoch = epoch, .seq = seq };
}

/* ---- taking a frame ---- */

static void take_zones(struct vw_proto_rx *rx, const struct vw_host_frame *f, uint64_t now_ns,
		       bool fresh)
{
	if (fresh)
		memset(rx->zones, 0, sizeof(rx->zones));
	for (size_t i = 0; i < f->n_zones; i++) {
		const struct vw_proto_zone *z = &f->zones[i];
		struct vw_proto_rx_zone *s;

		if (!zone_ok(z))
			continue;
		s = &rx->zones[z->zone];
		if (!s->seen || s->idle_uj != z->idle_uj || s->active_uj != z->active_uj) {
			s->since_ns = now_ns;
			s->since_seq = f->seq;
		}
		s->seen = true;
		s->idle_uj = z->idle_uj;
		s->active_uj = z->active_uj;
		s->watts = zone_watts(z);
	}
}

static enum vw_proto_error take(struct vw_proto_rx *rx, const struct vw_host_frame *f,
				uint64_t now_ns, enum vw_proto_take how,
				const struct vw_host_frame *from)
{
	bool new_epoch = rx->have && f->epoch != rx->epoch;

	if (!rx->expect_uuid[0])
		memcpy(rx->expect_uuid, f->vm_uuid, sizeof(rx->expect_uuid));
	if (new_epoch) {
		known_note(rx, rx->epoch, rx->seq); /* superseded: never taken whole again */
		rx->epochs++;
	}
	known_forget(rx, f->epoch);
	if (rx->have_rival && rx->rival.epoch == f->epoch)
		rx->have_rival = false;
	rx->have_pending = false;
	rx->writer_gone = false;
	take_zones(rx, f, now_ns, new_epoch || how != VW_PROTO_TAKE_DELTA);
	if (from)
		rx->from = *from;
	rx->take = how;
	rx->have_step = false;
	rx->have = true;
	rx->epoch = f->epoch;
	rx->seq = f->seq;
	rx->last = *f;
	rx->last_ns = now_ns;
	rx->accepted++;
	return VW_PROTO_OK;
}

/* The current epoch goes on: a held epoch was another publisher's, never a restart. */
static void pending_refuted(struct vw_proto_rx *rx)
{
	if (!rx->have_pending)
		return;
	known_note(rx, rx->pending.epoch, rx->pending.seq);
	rx->have_pending = false;
}

static enum vw_proto_error same_epoch(struct vw_proto_rx *rx, const struct vw_host_frame *f,
				      uint64_t now_ns)
{
	if (f->seq <= rx->seq)
		return VW_PROTO_E_SEQ;
	pending_refuted(rx);
	if (energy_fell(&rx->last, f))
		return VW_PROTO_E_ENERGY;
	if (!spike_in_epoch(rx, f, now_ns))
		return take(rx, f, now_ns, VW_PROTO_TAKE_DELTA, NULL);
	/* Continuing from the last spike: the counters stepped up and stayed. The step is not
	 * counted; the energy from it on is. */
	if (rx->have_step && continues(rx, &rx->step, rx->step_ns, f, now_ns))
		return take(rx, f, now_ns, VW_PROTO_TAKE_FROM, &rx->step);
	rx->step = *f;
	rx->step_ns = now_ns;
	rx->have_step = true;
	return VW_PROTO_E_SPIKE;
}

/*
 * Another publisher's frame while the current epoch keeps coming: rejected, its epoch
 * remembered, and the first such frame since the last accepted one kept as the base it would
 * take over from.
 */
static enum vw_proto_error conflict(struct vw_proto_rx *rx, const struct vw_host_frame *f,
				    uint64_t now_ns)
{
	known_note(rx, f->epoch, f->seq);
	if (!rx->have_rival || rx->rival.epoch != f->epoch || rx->rival_gen != rx->accepted ||
	    f->seq <= rx->rival.seq) {
		rx->rival = *f;
		rx->rival_ns = now_ns;
		rx->rival_gen = rx->accepted;
		rx->have_rival = true;
	}
	return VW_PROTO_E_CONFLICT;
}

/* The current epoch fell silent: another publisher takes over, never with its history. */
static enum vw_proto_error takeover(struct vw_proto_rx *rx, const struct vw_host_frame *f,
				    uint64_t now_ns)
{
	bool base = rx->have_rival && rx->rival_gen == rx->accepted &&
		    continues(rx, &rx->rival, rx->rival_ns, f, now_ns);

	rx->takeovers++;
	if (base)
		return take(rx, f, now_ns, VW_PROTO_TAKE_FROM, &rx->rival);
	return take(rx, f, now_ns, VW_PROTO_TAKE_BASE, NULL);
}

static bool current_silent(const struct vw_proto_rx *rx, uint64_t now_ns)
{
	if (rx->writer_gone)
		return true;
	return now_ns > rx->last_ns &&
	       now_ns - rx->last_ns >
		       VW_PROTO_TAKEOVER_INTERVALS * rx->last.interval_ms * VW_NSEC_PER_MSEC;
}

/*
 * A new epoch that can be a restart: taken whole once the current epoch is silent; until then
 * held. Taking it at once would count both publishers' histories whenever it is in fact a
 * second one (+12 % for two interleaved from the start).
 */
static enum vw_proto_error maybe_restart(struct vw_proto_rx *rx, const struct vw_host_frame *f,
					 uint64_t now_ns)
{
	if (current_silent(rx, now_ns)) {
		if (restart_plausible(rx, f, now_ns))
			return take(rx, f, now_ns, VW_PROTO_TAKE_WHOLE, NULL); /* a host restart */
		return takeover(rx, f, now_ns); /* from the held frame, if it continues from it */
	}
	if (rx->have_pending && rx->pending.epoch == f->epoch && f->seq <= rx->pending.seq)
		return VW_PROTO_E_SEQ;
	if (!rx->have_rival || rx->rival.epoch != f->epoch || rx->rival_gen != rx->accepted) {
		rx->rival = *f; /* the base should it take over rather than restart */
		rx->rival_ns = now_ns;
		rx->rival_gen = rx->accepted;
		rx->have_rival = true;
	}
	rx->pending = *f;
	rx->have_pending = true;
	return VW_PROTO_E_PENDING;
}

static enum vw_proto_error other_epoch(struct vw_proto_rx *rx, const struct vw_host_frame *f,
				       uint64_t now_ns)
{
	const struct vw_proto_epoch_seen *k = known_find(rx, f->epoch);

	if (k && f->seq <= k->seq)
		return VW_PROTO_E_CONFLICT; /* a replay, or a repeat: never a takeover */
	if (rx->have_pending && rx->pending.epoch == f->epoch)
		return maybe_restart(rx, f, now_ns);
	if (!k && restart_plausible(rx, f, now_ns))
		return maybe_restart(rx, f, now_ns);
	if (current_silent(rx, now_ns))
		return takeover(rx, f, now_ns);
	return conflict(rx, f, now_ns);
}

enum vw_proto_error vw_proto_rx_accept(struct vw_proto_rx *rx, const struct vw_host_frame *f,
				       uint64_t now_ns)
{
	enum vw_proto_error e;

	if (rx->expect_uuid[0] && strcasecmp(rx->expect_uuid, f->vm_uuid) != 0)
		e = VW_PROTO_E_UUID;
	else if (!rx->have)
		e = take(rx, f, now_ns, VW_PROTO_TAKE_WHOLE, NULL); /* the first frame */
	else if (f->epoch == rx->epoch)
		e = same_epoch(rx, f, now_ns);
	else
		e = other_epoch(rx, f, now_ns);
	if (e)
		rx->rejected[e]++;
	return e;
}

void vw_proto_rx_writer_gone(struct vw_proto_rx *rx)
{
	if (rx->have)
		rx->writer_gone = true;
}

enum vw_proto_error vw_proto_rx_line(struct vw_proto_rx *rx, const char *line, size_t len,
				     uint64_t now_ns)
{
	struct vw_host_frame f;
	enum vw_proto_error e = vw_proto_decode_host(line, len, &f);

	if (e) {
		rx->rejected[e]++;
		return e;
	}
	return vw_proto_rx_accept(rx, &f, now_ns);
}

/* ---- the guest's totals ---- */

static uint64_t delta(struct vw_proto_acc *acc, uint64_t prev, uint64_t cur)
{
	if (cur >= prev)
		return cur - prev;
	acc->falls++; /* vw_proto_rx_accept stops this; a zone that came back lower lands here */
	return 0;
}

static void add_zone(struct vw_proto_acc *acc, const struct vw_proto_rx *rx,
		     const struct vw_proto_zone *z)
{
	struct vw_proto_acc_zone *t = &acc->zones[z->zone];
	const struct vw_proto_zone *b;
	uint64_t di = 0, da = 0;

	switch (rx->take) {
	case VW_PROTO_TAKE_DELTA:
		di = t->seen ? delta(acc, t->prev_idle_uj, z->idle_uj) : z->idle_uj;
		da = t->seen ? delta(acc, t->prev_active_uj, z->active_uj) : z->active_uj;
		break;
	case VW_PROTO_TAKE_WHOLE:
		di = z->idle_uj;
		da = z->active_uj;
		break;
	case VW_PROTO_TAKE_FROM:
		if ((b = find_zone(&rx->from, z->zone))) {
			di = delta(acc, b->idle_uj, z->idle_uj);
			da = delta(acc, b->active_uj, z->active_uj);
		}
		break;
	case VW_PROTO_TAKE_BASE:
		break;
	}
	t->idle_uj = vw_add_sat(t->idle_uj, di);
	t->active_uj = vw_add_sat(t->active_uj, da);
	t->prev_idle_uj = z->idle_uj;
	t->prev_active_uj = z->active_uj;
	t->idle_w = z->idle_w;
	t->active_w = z->active_w;
	t->seen = true;
}

void vw_proto_acc_add(struct vw_proto_acc *acc, const struct vw_proto_rx *rx)
{
	const struct vw_host_frame *f = &rx->last;

	if (acc->have && f->epoch != acc->epoch) {
		acc->restarts++;
		for (size_t z = 0; z < VW_ZONE__WIRE_COUNT; z++)
			acc->zones[z].seen = false;
	}
	acc->have = true;
	acc->epoch = f->epoch;
	for (size_t i = 0; i < f->n_zones; i++)
		if (zone_ok(&f->zones[i]))
			add_zone(acc, rx, &f->zones[i]);
}
