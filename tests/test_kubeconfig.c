/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubeconfig files as kubectl writes them (Kepler's kube.config): the current context's
 * cluster and user, paths relative to the file, base64 PEM data, and the refusals that name
 * what to do instead.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kubeconfig.h"

/* "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" in base64. */
#define PEM_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
#define PEM "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

static int parse(const char *text, struct vw_kubeconfig *k, char *err)
{
	return vw_kubeconfig_parse("/etc/kepler/kubeconfig", text, strlen(text), k, err, 512);
}

/* kind's kubeconfig shape: client certificate data, the CA as data, two contexts. */
static void test_client_certificate(void **state)
{
	struct vw_kubeconfig k;
	char err[512] = "";

	(void)state;
	if (parse("apiVersion: v1\nkind: Config\npreferences: {}\n"
		  "clusters:\n"
		  "- cluster:\n    certificate-authority-data: " PEM_B64 "\n"
		  "    server: https://127.0.0.1:6443\n  name: kind-kind\n"
		  "- cluster:\n    server: https://prod:6443\n  name: prod\n"
		  "contexts:\n"
		  "- context:\n    cluster: prod\n    user: prod-admin\n  name: prod\n"
		  "- context:\n    cluster: kind-kind\n    user: kind-kind\n    namespace: x\n"
		  "  name: kind-kind\n"
		  "current-context: kind-kind\n"
		  "users:\n- name: kind-kind\n  user:\n"
		  "    client-certificate-data: " PEM_B64 "\n"
		  "    client-key-data: " PEM_B64 "\n",
		  &k, err) != 0)
		fail_msg("%s", err);
	assert_string_equal(k.context, "kind-kind");
	assert_string_equal(k.cluster, "kind-kind");
	assert_string_equal(k.user, "kind-kind");
	assert_string_equal(k.server, "https://127.0.0.1:6443");
	assert_string_equal(k.ca_pem, PEM);
	assert_null(k.ca_file);
	assert_string_equal(k.cert_pem, PEM);
	assert_string_equal(k.key_pem, PEM);
	assert_null(k.token);
	assert_false(k.insecure);
	vw_kubeconfig_free(&k);
}

/* Paths relative to the file's folder, a token file, insecure-skip-tls-verify. */
static void test_paths_and_token(void **state)
{
	struct vw_kubeconfig k;
	char err[512] = "";

	(void)state;
	if (parse("current-context: c\n"
		  "clusters: [{name: k, cluster: {server: 'https://10.0.0.1', "
		  "certificate-authority: ca.crt, insecure-skip-tls-verify: true}}]\n"
		  "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
		  "users: [{name: u, user: {tokenFile: /var/run/tok, client-certificate: "
		  "certs/c.crt, client-key: /k/c.key}}]\n",
		  &k, err) != 0)
		fail_msg("%s", err);
	assert_string_equal(k.ca_file, "/etc/kepler/ca.crt");
	assert_true(k.insecure);
	assert_string_equal(k.token_file, "/var/run/tok");
	assert_string_equal(k.cert_file, "/etc/kepler/certs/c.crt");
	assert_string_equal(k.key_file, "/k/c.key");
	vw_kubeconfig_free(&k);
}

static void expect(const char *text, int want, const char *msg)
{
	struct vw_kubeconfig k;
	char err[512] = "";
	int r = parse(text, &k, err);

	if (r != want || !strstr(err, msg))
		fail_msg("got %d '%s', want %d with '%s'", r, err, want, msg);
}

static void test_refusals(void **state)
{
	(void)state;
	expect("clusters: []\n", -EINVAL, "no current-context");
	expect("current-context: x\ncontexts: []\n", -EINVAL,
	       "current-context \"x\" is not in contexts");
	expect("current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n", -EINVAL,
	       "context \"c\": no cluster \"k\"");
	expect("current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
	       "clusters: [{name: k, cluster: {server: 'https://a'}}]\n"
	       "users: [{name: u, user: {exec: {command: aws}}}]\n",
	       -EOPNOTSUPP, "user \"u\" authenticates with an exec plugin, which virtwatt does not "
			    "run: give it a token");
	expect("current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
	       "clusters: [{name: k, cluster: {server: 'https://a'}}]\n"
	       "users: [{name: u, user: {client-certificate: a.crt}}]\n",
	       -EINVAL, "a client certificate needs its key");
	expect("current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
	       "clusters: [{name: k, cluster: {server: 'https://a', "
	       "certificate-authority-data: '!!!'}}]\n",
	       -EINVAL, "certificate-authority-data: not base64");
	expect("current-context: &a c\n", -EINVAL, "kubeconfig");
	expect("- a\n", -EINVAL, "the top level must be a mapping");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_certificate),
		cmocka_unit_test(test_paths_and_token),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
