/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: pod metadata from the Kubernetes API server and the kubelet (podmeta.c's
 * list and watch handling over podtable.c), through an offline client fed the bodies the worker
 * would receive. The input's first line is a PodList as the API server sends it, the rest its
 * watch stream, fed in two chunks split where the first byte says (the framing's state carries
 * over); the whole input is also a kubelet /pods body. Then every 64-hex container ID of the
 * input is looked up. Properties: the live pod count stays within the table's cap; a container
 * found belongs to a pod with a valid UID, a name and a namespace, which its UID finds again,
 * and a KubeVirt VMI owner's name only where its controller is one;
 * and for the input's leading CPU quantity X (millicores, rounded up), Xm's is X's / 1000
 * rounded up, and X's is Xk's / 1000 rounded up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "podmeta-priv.h"

#define MAX_PODS 16384 /* podtable.c */
#define MAX_LOOKUPS 32

static void check_lookups(struct vw_podmeta *pm, const uint8_t *data, size_t size)
{
	static char ids[MAX_LOOKUPS][VW_FUZZ_HEX64];
	size_t n = vw_fuzz_hex64(data, size, ids, MAX_LOOKUPS);

	vw_fuzz_assert(vw_podmeta_count(pm) <= MAX_PODS, "%zu pods", vw_podmeta_count(pm));
	for (size_t i = 0; i < n; i++) {
		struct vw_pod_info info, again;
		char name[64];

		if (vw_podmeta_by_container(pm, ids[i], &info, name, sizeof(name)) < 0)
			continue;
		vw_fuzz_assert((strlen(info.uid) == 36 || strlen(info.uid) == 32) &&
				       vw_fuzz_charset(info.uid, "0123456789abcdef-"),
			       "container %s: pod UID \"%s\"", ids[i], info.uid);
		vw_fuzz_assert(info.name[0] && vw_fuzz_terminated(info.name, sizeof(info.name)) &&
				       info.namespace_[0] &&
				       vw_fuzz_terminated(info.namespace_, sizeof(info.namespace_)),
			       "container %s: pod without a name or namespace", ids[i]);
		vw_fuzz_assert(vw_fuzz_terminated(info.kubevirt_owner, sizeof(info.kubevirt_owner)) &&
				       (info.kubevirt_owned || !info.kubevirt_owner[0]),
			       "container %s: a KubeVirt owner \"%s\" without a VMI controller",
			       ids[i], info.kubevirt_owner);
		vw_fuzz_assert(vw_podmeta_by_uid(pm, info.uid, &again) == 0 &&
				       strcmp(again.name, info.name) == 0 &&
				       strcmp(again.namespace_, info.namespace_) == 0,
			       "container %s: its pod %s is not found by UID", ids[i], info.uid);
	}
}

static struct vw_podmeta *client(enum vw_podmeta_mode mode)
{
	const struct vw_podmeta_opts o = {
		.mode = mode,
		.url = "http://127.0.0.1:9",
		.allow_http = true,
		.token_file = "/nonexistent-fuzz/token",
		.node_name = "node-a",
		.max_event_bytes = 64 << 10,
	};
	struct vw_podmeta *pm = vw_podmeta_new_offline(&o);

	if (!pm)
		abort();
	return pm;
}

/* The API server: a list, then its watch stream in two chunks. */
static void apiserver(const uint8_t *data, size_t size)
{
	struct vw_podmeta *pm = client(VW_PODMETA_APISERVER);
	const uint8_t *nl = memchr(data, '\n', size);
	size_t list = nl ? (size_t)(nl - data) : size, rest = size - list, split;
	int r = vw_podmeta_feed_list(pm, (const char *)data, list);

	vw_fuzz_assert(r == 0 || r == -EBADMSG, "list: %d", r);
	vw_fuzz_assert(r == 0 || !vw_podmeta_synced(pm), "synced by a bad list");
	if (rest) { /* after the list's newline */
		list++;
		rest--;
	}
	split = rest ? data[0] % (rest + 1) : 0;
	(void)vw_podmeta_feed_watch(pm, (const char *)data + list, split);
	(void)vw_podmeta_feed_watch(pm, (const char *)data + list + split, rest - split);
	check_lookups(pm, data, size);
	vw_podmeta_stop(pm);
}

static void kubelet(const uint8_t *data, size_t size)
{
	struct vw_podmeta *pm = client(VW_PODMETA_KUBELET);
	int r = vw_podmeta_feed_list(pm, (const char *)data, size);

	vw_fuzz_assert(r == 0 || r == -EBADMSG, "kubelet list: %d", r);
	check_lookups(pm, data, size);
	vw_podmeta_stop(pm);
}

/* "X" against "Xm" and "Xk" for the input's leading quantity without a suffix. */
static void check_quantity(const uint8_t *data, size_t size)
{
	char q[40];
	size_t n = 0;
	uint64_t plain, milli, kilo;

	while (n < size && n < 32 && ((data[n] >= '0' && data[n] <= '9') || data[n] == '.'))
		n++;
	memcpy(q, data, n);
	q[n] = '\0';
	if (vw_podmeta_parse_cpu_millis(q, &plain) < 0)
		return;
	strcpy(q + n, "m");
	vw_fuzz_assert(vw_podmeta_parse_cpu_millis(q, &milli) == 0, "%s fails", q);
	vw_fuzz_assert(milli == plain / 1000 + (plain % 1000 != 0), "%s: %llu, but %.*s: %llu", q,
		       (unsigned long long)milli, (int)n, q, (unsigned long long)plain);
	strcpy(q + n, "k");
	if (vw_podmeta_parse_cpu_millis(q, &kilo) == 0)
		vw_fuzz_assert(plain == kilo / 1000 + (kilo % 1000 != 0),
			       "%s: %llu, but %.*s: %llu", q, (unsigned long long)kilo, (int)n, q,
			       (unsigned long long)plain);
	else /* only when a thousand times X overflows */
		vw_fuzz_assert(plain > UINT64_MAX / 1000, "%s fails", q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1u << 20))
		return 0;
	apiserver(data, size);
	kubelet(data, size);
	check_quantity(data, size);
	return 0;
}
