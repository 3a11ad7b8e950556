#!/bin/sh
# deploy/prometheus/prometheus.yml through `promtool check config` (also its commented
# kubernetes_sd_configs variant, uncommented), the alerts (virtwatt-alerts.yml) through
# `promtool check rules` and their unit test `promtool test rules`, the PrometheusRule holding
# the same groups, and deploy/systemd/*.service through
# `systemd-analyze verify` (ExecStart pointed at the built binaries). TAP. A missing tool is a
# skip, or a failure under CI=true.
# usage: check_configs.sh SOURCE_ROOT HOST_BIN GUEST_BIN
set -u
src=$1 host_bin=$2 guest_bin=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/out"; }
missing() {
	n=$((n + 1))
	if [ "${CI:-}" = true ]; then
		failed=$((failed + 1)); echo "not ok $n - $1 # $2 not installed"
	else
		echo "ok $n - $1 # SKIP $2 not installed"
	fi
}

prom=$src/deploy/prometheus/prometheus.yml
if command -v promtool >/dev/null 2>&1; then
	if promtool check config "$prom" >"$tmp/out" 2>&1; then ok "promtool check config prometheus.yml"
	else notok "promtool check config prometheus.yml"; fi
	# The commented Kubernetes job, uncommented and appended to scrape_configs (in $tmp, with
	# the rules file it names).
	cp "$src/deploy/prometheus/virtwatt-alerts.yml" "$tmp/"
	{
		sed '/In Kubernetes without/,$d' "$prom"
		sed -n '/# - job_name: virtwatt-kubernetes/,$p' "$prom" | sed 's/^  # \{0,1\}/  /'
	} >"$tmp/prom-k8s.yml"
	if ! grep -q 'kubernetes_sd_configs' "$tmp/prom-k8s.yml"; then
		echo "kubernetes job not found" >"$tmp/out"; notok "kubernetes_sd variant present"
	elif promtool check config "$tmp/prom-k8s.yml" >"$tmp/out" 2>&1; then
		ok "promtool check config, kubernetes_sd variant"
	elif grep -q 'field kubernetes_sd_configs not found' "$tmp/out"; then
		# Debian's prometheus is built without Kubernetes service discovery: check the rest of
		# the job (relabelling, scrape settings) with the discovery block swapped for a static
		# target, which this promtool does know.
		awk '/^    kubernetes_sd_configs:/ { print "    static_configs:"; print "      - targets: [\"127.0.0.1:28282\"]"; skip = 1; next }
		     skip && /^      / { next } { skip = 0; print }' "$tmp/prom-k8s.yml" >"$tmp/prom-k8s-static.yml"
		if promtool check config "$tmp/prom-k8s-static.yml" >"$tmp/out" 2>&1; then
			ok "promtool check config, kubernetes job (discovery block swapped: this promtool has no kubernetes_sd)"
		else
			notok "promtool check config, kubernetes job"
		fi
	else
		notok "promtool check config, kubernetes_sd variant"
	fi
	alerts=$src/deploy/prometheus/virtwatt-alerts.yml
	if promtool check rules "$alerts" >"$tmp/out" 2>&1; then ok "promtool check rules virtwatt-alerts.yml"
	else notok "promtool check rules virtwatt-alerts.yml"; fi
	if (cd "$src/deploy/prometheus" && promtool test rules virtwatt-alerts.test.yml) >"$tmp/out" 2>&1
	then ok "promtool test rules virtwatt-alerts.test.yml"
	else notok "promtool test rules virtwatt-alerts.test.yml"; fi
	# The PrometheusRule's groups are the rules file's, and promtool accepts them as rules.
	if python3 - "$alerts" "$src/deploy/prometheus/virtwatt-prometheusrule.yaml" "$tmp/pr-rules.yml" >"$tmp/out" 2>&1 <<'PY'
import sys, yaml
rules = yaml.safe_load(open(sys.argv[1]))
pr = yaml.safe_load(open(sys.argv[2]))
assert pr["kind"] == "PrometheusRule" and pr["apiVersion"] == "monitoring.coreos.com/v1", pr["kind"]
assert pr["spec"]["groups"] == rules["groups"], "spec.groups differ from virtwatt-alerts.yml"
yaml.safe_dump({"groups": pr["spec"]["groups"]}, open(sys.argv[3], "w"))
PY
	then
		if promtool check rules "$tmp/pr-rules.yml" >"$tmp/out" 2>&1; then ok "PrometheusRule = virtwatt-alerts.yml, promtool check rules"
		else notok "PrometheusRule's groups through promtool check rules"; fi
	else
		notok "PrometheusRule holds virtwatt-alerts.yml's groups"
	fi
else
	missing "promtool check config prometheus.yml" promtool
fi

for unit in virtwatt-host virtwatt-guest; do
	if ! command -v systemd-analyze >/dev/null 2>&1; then
		missing "systemd-analyze verify $unit.service" systemd-analyze
		continue
	fi
	bin=$host_bin
	[ "$unit" = virtwatt-guest ] && bin=$guest_bin
	sed "s#^ExecStart=/usr/local/sbin/$unit #ExecStart=$bin #" "$src/deploy/systemd/$unit.service" \
		>"$tmp/$unit.service"
	if ! grep -q "^ExecStart=$bin " "$tmp/$unit.service"; then
		echo "ExecStart=/usr/local/sbin/$unit not found" >"$tmp/out"
		notok "systemd-analyze verify $unit.service"
		continue
	fi
	# Any message (unknown directive, bad value) is a failure, not only a non-zero status.
	if SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$tmp/$unit.service" >"$tmp/out" 2>&1 &&
		! [ -s "$tmp/out" ]; then
		ok "systemd-analyze verify $unit.service"
	else
		notok "systemd-analyze verify $unit.service"
	fi
done

echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
