/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The libvirt helper: virtwatt-host run again as `virtwatt-host --internal-libvirt-list=URI` by
 * its own daemon (vm_libvirt_child.c), the only process that loads libvirt. It reads what the
 * daemon asks on stdin ("full": every domain's XML; else "known UUID ID" lines, one per domain
 * whose XML the daemon holds for that start of it), connects read-only, lists the active
 * domains (ID, UUID, name), fetches the XML of those the daemon lacks and every domain's state,
 * writes one answer (vm_libvirt_wire.h) on stdout and exits. libvirt with GLib, libxml2, ICU
 * and its transports is ~14 MiB resident in any process that loads it: here it lives for the
 * tens of milliseconds of one answer, not for the daemon's life.
 *
 * Not for people: refused unless stdin and stdout are pipes (the daemon's). It drops every
 * capability first, dies with the daemon (PR_SET_PDEATHSIG) and after HELPER_MAX_S in any case.
 */
#include <errno.h>
#include <linux/capability.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "vm_libvirt_helper.h"
#include "vm_libvirt_priv.h"
#include "vm_libvirt_wire.h"
#include "vm_priv.h"

#define HELPER_MAX_S 120
#define MAX_REQUEST (1u << 20)

struct known {
	char uuid[VW_UUID_LEN];
	int id;
};

struct request {
	bool full;
	struct known *known;
	size_t n_known, cap_known;
};

static void quiet(void *userdata, virErrorPtr err)
{
	(void)userdata;
	(void)err; /* the failures that matter go back to the daemon in the answer */
}

/* The daemon's capabilities (CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, or all
 * of root's) are none of the helper's business: a read-only libvirt client needs none. */
static void drop_capabilities(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { { 0 } };

	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (syscall(SYS_capset, &h, d) < 0)
		fprintf(stderr, "virtwatt-host: libvirt helper: cannot drop capabilities: %s\n",
			strerror(errno));
}

static bool is_pipe(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

static int read_request(struct request *rq)
{
	_cleanup_free_ char *buf = malloc(MAX_REQUEST + 1);
	size_t len = 0;
	char *line, *save = NULL;

	if (!buf)
		return -ENOMEM;
	while (len < MAX_REQUEST) {
		ssize_t k = read(STDIN_FILENO, buf + len, MAX_REQUEST - len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		len += (size_t)k;
	}
	buf[len] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char uuid[64];
		int id;

		if (strcmp(line, "full") == 0) {
			rq->full = true;
			continue;
		}
		if (sscanf(line, "known %63s %d", uuid, &id) != 2)
			continue;
		if (vw_array_grow((void **)&rq->known, sizeof(*rq->known), rq->n_known,
				  &rq->cap_known) < 0)
			return -ENOMEM;
		if (vw_vm_uuid_canon(uuid, strlen(uuid), rq->known[rq->n_known].uuid) < 0)
			continue;
		rq->known[rq->n_known++].id = id;
	}
	return 0;
}

static bool known(const struct request *rq, const struct vw_virt_dom *d)
{
	for (size_t i = 0; i < rq->n_known; i++)
		if (rq->known[i].id == d->id && strcmp(rq->known[i].uuid, d->uuid) == 0)
			return true;
	return false;
}

static const char *last_error(void)
{
	const char *m = virGetLastErrorMessage();

	return m ? m : "unknown error";
}

/* A domain's UUID, canonical. 0, or -EINVAL. */
static int dom_uuid(virDomainPtr dom, char out[VW_UUID_LEN])
{
	char raw[VIR_UUID_STRING_BUFLEN];

	if (virDomainGetUUIDString(dom, raw) < 0)
		return -EINVAL;
	return vw_vm_uuid_canon(raw, strlen(raw), out);
}

static enum vw_vm_state map_state(int s)
{
	switch (s) {
	case VIR_DOMAIN_PAUSED:
	case VIR_DOMAIN_PMSUSPENDED:
		return VW_VM_PAUSED;
	case VIR_DOMAIN_SHUTOFF:
	case VIR_DOMAIN_CRASHED:
		return VW_VM_SHUTOFF;
	default: /* running, blocked, shutting down, no state */
		return VW_VM_RUNNING;
	}
}

/* The active domains, and the XML of those the daemon lacks. */
static int list(virConnectPtr c, const struct request *rq, struct vw_lvw_buf *b)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(c, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);

	if (n < 0)
		return -EIO;
	for (int i = 0; i < n; i++) {
		struct vw_virt_dom d = { .id = (int)virDomainGetID(doms[i]) };
		const char *name = virDomainGetName(doms[i]);

		if (dom_uuid(doms[i], d.uuid) == 0) {
			snprintf(d.name, sizeof(d.name), "%s", name ? name : "");
			vw_lvw_put_dom(b, &d);
			if (rq->full || !known(rq, &d)) {
				char *xml = virDomainGetXMLDesc(doms[i], 0);

				if (xml)
					vw_lvw_put_xml(b, d.uuid, xml, strlen(xml));
				free(xml);
			}
		}
		virDomainFree(doms[i]);
	}
	free(doms);
	return 0;
}

static int stats(virConnectPtr c, struct vw_lvw_buf *b)
{
	virDomainStatsRecordPtr *recs = NULL;
	int n = virConnectGetAllDomainStats(c, VIR_DOMAIN_STATS_STATE, &recs,
					    VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE);

	if (n < 0)
		return -EIO;
	for (int i = 0; i < n; i++) {
		struct vw_virt_stat s = { .state = VW_VM_RUNNING };

		if (dom_uuid(recs[i]->dom, s.uuid) < 0)
			continue;
		for (int j = 0; j < recs[i]->nparams; j++) {
			const virTypedParameter *p = &recs[i]->params[j];

			if (strcmp(p->field, "state.state") == 0 && p->type == VIR_TYPED_PARAM_INT)
				s.state = map_state(p->value.i);
		}
		vw_lvw_put_stat(b, &s);
	}
	virDomainStatsRecordListFree(recs);
	return 0;
}

static void answer(const char *uri, const struct request *rq, struct vw_lvw_buf *b)
{
	const char *why = vw_libvirt_load();
	virConnectPtr c;

	if (why) {
		vw_lvw_put_fail(b, -ENOPKG, why);
		return;
	}
	if (virInitialize() < 0) {
		vw_lvw_put_fail(b, -EIO, last_error());
		return;
	}
	virSetErrorFunc(NULL, quiet);
	c = virConnectOpenReadOnly(uri);
	if (!c) {
		vw_lvw_put_fail(b, -ECONNREFUSED, last_error());
		return;
	}
	if (list(c, rq, b) < 0 || stats(c, b) < 0)
		vw_lvw_put_fail(b, virConnectIsAlive(c) == 1 ? -EIO : -ENOTCONN, last_error());
	virConnectClose(c);
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t k = write(fd, p, len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

bool vw_libvirt_helper_wanted(int argc, char **argv)
{
	return argc >= 2 && strncmp(argv[1], VW_LIBVIRT_HELPER_ARG, strlen(VW_LIBVIRT_HELPER_ARG)) == 0;
}

int vw_libvirt_helper_main(int argc, char **argv)
{
	struct request rq = { 0 };
	struct vw_lvw_buf b;
	int r;

	if (argc != 2 || !is_pipe(STDIN_FILENO) || !is_pipe(STDOUT_FILENO)) {
		fputs("virtwatt-host: " VW_LIBVIRT_HELPER_ARG "URI is the daemon's own libvirt "
		      "helper: it answers only on the pipes the daemon gives it\n", stderr);
		return 2;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(HELPER_MAX_S);
	drop_capabilities();
	vw_log_set_level(VW_LOG_ERROR);
	vw_lvw_begin(&b);
	r = read_request(&rq);
	if (r < 0)
		vw_lvw_put_fail(&b, r, "cannot read the daemon's request");
	else
		answer(argv[1] + strlen(VW_LIBVIRT_HELPER_ARG), &rq, &b);
	free(rq.known);
	r = vw_lvw_end(&b);
	if (r < 0) { /* too big or no memory: say so in an answer that fits */
		free(b.p);
		vw_lvw_begin(&b);
		vw_lvw_put_fail(&b, r, "the helper's answer does not fit (too many domains?)");
		vw_lvw_end(&b);
	}
	r = b.err ? b.err : write_all(STDOUT_FILENO, b.p, b.len);
	free(b.p);
	return r < 0 ? 1 : 0;
}
