/* SPDX-License-Identifier: Apache-2.0 */
/* For the tests of the workload registry (test_workloads, test_bounds): a fake kubelet with a
 * pod-metadata client synced to it, and the registry's exposition. */
#pragma once

struct MHD_Daemon;
struct vw_podmeta;
struct vw_workloads;

struct kubelet_fixture {
	struct MHD_Daemon *d;
	struct vw_podmeta *pm; /* kubelet mode over plain HTTP, node "n1", polling every second */
};

/* Serve body (it must outlive k) and start k->pm on it; returns once it has the list (fails
 * the test after 10 s). */
void kubelet_fixture_start(struct kubelet_fixture *k, const char *body);
void kubelet_fixture_stop(struct kubelet_fixture *k);

/* w rendered as text 0.0.4 for node "n1" and accountant "procfs", its GPU families too
 * (malloc'd; fails the test). */
char *workloads_fixture_render(struct vw_workloads *w);
