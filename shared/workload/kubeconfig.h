/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A kubeconfig file (Kepler's kube.config, kubectl's ~/.kube/config), for running outside a
 * pod: its current context's cluster (server, certificate authority) and user (a bearer token,
 * a token file, or a client certificate and key), as the pod metadata client uses them. Paths
 * in the file are relative to its folder, as kubectl reads them; the *-data fields are base64
 * PEM. Exec plugins and auth providers are refused with a message naming the alternative.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct vw_kubeconfig {
	char *context, *cluster, *user; /* the names used */
	char *server;                   /* https://... */
	char *ca_file, *ca_pem;         /* certificate-authority, -data (decoded) */
	bool insecure;                  /* insecure-skip-tls-verify */
	char *token, *token_file;
	char *cert_file, *key_file;     /* client-certificate, client-key */
	char *cert_pem, *key_pem;       /* their -data forms, decoded */
};

/*
 * Read path (at most 1 MiB) and resolve its current-context. 0, or -errno with the reason in
 * err ("kubeconfig /k: context \"kind\": no cluster \"x\""). ret is zeroed first.
 */
int vw_kubeconfig_load(const char *path, struct vw_kubeconfig *ret, char *err, size_t errlen);
/* The same for the file's text in memory; path names it and anchors its relative paths. */
int vw_kubeconfig_parse(const char *path, const char *text, size_t len, struct vw_kubeconfig *ret,
			char *err, size_t errlen);
void vw_kubeconfig_free(struct vw_kubeconfig *k);
