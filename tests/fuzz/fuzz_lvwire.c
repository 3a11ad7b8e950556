/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the libvirt helper's answer as the daemon reads it (host/vm/vm_libvirt_wire.c;
 * the helper is a child process, its answer input like any other). Properties: a refused answer
 * leaves nothing allocated behind (ASan) and says why; an accepted one has canonical UUIDs,
 * NUL-terminated names and documents within their limits, known states, and written again
 * through the helper's own writer it parses to the same values.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "vm_libvirt_wire.h"
#include "vm_priv.h"

static void check_uuid(const char *u)
{
	char canon[VW_UUID_LEN];

	vw_fuzz_assert(vw_fuzz_terminated(u, VW_UUID_LEN) &&
			       vw_vm_uuid_canon(u, strlen(u), canon) == 0 && strcmp(u, canon) == 0,
		       "UUID \"%s\" not canonical", u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vw_lvw_answer a, b;
	struct vw_lvw_buf w;
	const char *why = NULL;
	int r = vw_lvw_parse(data, size, &a, &why);

	if (r < 0) {
		vw_fuzz_assert(r == -EBADMSG || r == -EPROTO || r == -ENOMEM, "parse: %d", r);
		vw_fuzz_assert(why && why[0], "refused without a reason");
		vw_lvw_answer_free(&a);
		return 0;
	}
	vw_fuzz_assert(a.fail <= 0, "failure %d", a.fail);
	vw_fuzz_assert(vw_fuzz_terminated(a.fail_msg, sizeof(a.fail_msg)), "message unterminated");
	vw_lvw_begin(&w);
	for (size_t i = 0; i < a.n_doms; i++) {
		check_uuid(a.doms[i].uuid);
		vw_fuzz_assert(vw_fuzz_terminated(a.doms[i].name, sizeof(a.doms[i].name)), "name");
		vw_lvw_put_dom(&w, &a.doms[i]);
	}
	for (size_t i = 0; i < a.n_stats; i++) {
		check_uuid(a.stats[i].uuid);
		vw_fuzz_assert(a.stats[i].state <= VW_VM_SHUTOFF, "state %d", (int)a.stats[i].state);
		vw_lvw_put_stat(&w, &a.stats[i]);
	}
	for (size_t i = 0; i < a.n_xmls; i++) {
		size_t l = strlen(a.xmls[i].xml);

		check_uuid(a.xmls[i].uuid);
		vw_fuzz_assert(l <= VW_LVW_MAX_XML, "XML of %zu bytes", l);
		vw_lvw_put_xml(&w, a.xmls[i].uuid, a.xmls[i].xml, l);
	}
	if (a.fail)
		vw_lvw_put_fail(&w, a.fail, a.fail_msg);
	vw_fuzz_assert(vw_lvw_end(&w) == 0, "written again: %d", w.err);
	r = vw_lvw_parse(w.p, w.len, &b, &why);
	vw_fuzz_assert(r == 0, "written again, refused: %s", why);
	vw_fuzz_assert(b.n_doms == a.n_doms && b.n_stats == a.n_stats && b.n_xmls == a.n_xmls &&
			       b.fail == a.fail && strcmp(b.fail_msg, a.fail_msg) == 0,
		       "written again, parsed to other counts");
	for (size_t i = 0; i < a.n_doms; i++)
		vw_fuzz_assert(memcmp(&a.doms[i], &b.doms[i], sizeof(a.doms[i])) == 0 ||
				       (a.doms[i].id == b.doms[i].id &&
					strcmp(a.doms[i].uuid, b.doms[i].uuid) == 0 &&
					strcmp(a.doms[i].name, b.doms[i].name) == 0),
			       "domain %zu differs", i);
	for (size_t i = 0; i < a.n_xmls; i++)
		vw_fuzz_assert(strcmp(a.xmls[i].xml, b.xmls[i].xml) == 0, "XML %zu differs", i);
	free(w.p);
	vw_lvw_answer_free(&a);
	vw_lvw_answer_free(&b);
	return 0;
}
