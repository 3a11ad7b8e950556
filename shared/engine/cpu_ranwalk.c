/* SPDX-License-Identifier: Apache-2.0 */
/* --cpu.ran-walk=auto's decision (cpu_ranwalk.h): pure, the counts come from the caller. */
#include "cpu_ranwalk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

bool vw_ranwalk_decide(const struct vw_ranwalk_costs *c, bool on,
		       const struct vw_ranwalk_window *w)
{
	uint64_t walks = mul_sat(w->task_reads, c->task_ns);
	uint64_t marker = mul_sat(w->switches, c->switch_ns);

	if (!on)
		return walks / 2 >= marker && walks > 0;
	return walks >= marker;
}

void vw_ranwalk_auto_init(struct vw_ranwalk_auto *a)
{
	*a = (struct vw_ranwalk_auto){
		.cost = { .task_ns = VW_RANWALK_TASK_NS, .switch_ns = VW_RANWALK_SWITCH_NS },
	};
}

bool vw_ranwalk_auto_tick(struct vw_ranwalk_auto *a)
{
	if (a->reads < VW_RANWALK_EVERY)
		a->reads++;
	return !a->primed || a->reads >= VW_RANWALK_EVERY;
}

bool vw_ranwalk_auto_end(struct vw_ranwalk_auto *a, uint64_t ctxt, uint64_t tasks)
{
	if (a->primed && ctxt >= a->ctxt0) {
		struct vw_ranwalk_window w = { .task_reads = mul_sat(tasks, a->reads),
					       .switches = ctxt - a->ctxt0 };

		a->on = vw_ranwalk_decide(&a->cost, a->on, &w);
		a->windows++;
		a->last_switches = a->reads ? w.switches / a->reads : w.switches;
	}
	a->primed = true;
	a->ctxt0 = ctxt;
	a->reads = 0;
	return a->on;
}

int vw_ranwalk_parse_ctxt(const char *stat, size_t len, uint64_t *ret)
{
	static const char key[] = "ctxt ";
	const char *p = stat, *end = stat + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);

		if (n > sizeof(key) - 1 && n < 64 && memcmp(p, key, sizeof(key) - 1) == 0) {
			char num[64];

			memcpy(num, p + sizeof(key) - 1, n - (sizeof(key) - 1));
			num[n - (sizeof(key) - 1)] = '\0';
			return vw_parse_u64(num, ret) < 0 ? -EINVAL : 0;
		}
		p = nl ? nl + 1 : end;
	}
	return -ENOENT;
}

int vw_ranwalk_parse_tasks(const char *loadavg, uint64_t *ret)
{
	const char *p = loadavg, *slash;
	char num[24];
	size_t n;

	for (int field = 0; field < 3; field++) { /* three load averages */
		p += strspn(p, " ");
		p += strcspn(p, " \n");
	}
	p += strspn(p, " ");
	slash = p + strcspn(p, "/ \n");
	if (*slash != '/')
		return -EINVAL;
	n = strcspn(slash + 1, " \n");
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, slash + 1, n);
	num[n] = '\0';
	return vw_parse_u64(num, ret) < 0 ? -EINVAL : 0;
}
