#!/bin/sh
# Every rules file under deploy/prometheus/ through `promtool check rules`, and every unit test
# under tests/deploy/rules/ through `promtool test rules`; the Helm chart's PrometheusRule
# carries exactly those rules. TAP. No promtool (or helm) is a skip, or a failure under CI=true.
# usage: check_rules.sh SOURCE_ROOT
set -u
src=$1
n=0 failed=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

check() { # description, command...
	desc=$1
	shift
	n=$((n + 1))
	if "$@" >"$out" 2>&1; then
		echo "ok $n - $desc"
	else
		failed=$((failed + 1))
		echo "not ok $n - $desc"
		sed 's/^/# /' "$out"
	fi
}

if ! command -v promtool >/dev/null 2>&1; then
	if [ "${CI:-}" = true ]; then echo "not ok 1 - promtool # not installed"; echo "1..1"; exit 1; fi
	echo "1..0 # SKIP promtool not installed"
	exit 0
fi
found=0
for f in "$src"/deploy/prometheus/*rules*.yml "$src"/deploy/prometheus/virtwatt-alerts.yml; do
	[ -e "$f" ] || continue
	found=1
	check "promtool check rules $(basename "$f")" promtool check rules "$f"
done
for t in "$src"/tests/deploy/rules/*.test.yml; do
	[ -e "$t" ] || continue
	found=1
	check "promtool test rules $(basename "$t")" promtool test rules "$t"
done
# The chart's PrometheusRule carries the same rules: its copies are the files byte for byte,
# and what helm renders (rules on) is exactly their groups, which promtool accepts as a file.
for f in virtwatt-alerts.yml virtwatt-recording-rules.yml; do
	check "the chart's rules/$f is deploy/prometheus/$f" \
		cmp "$src/deploy/prometheus/$f" "$src/deploy/helm/virtwatt/rules/$f"
done
if helm_dir=$("$src/deploy/tools/fetch-helm.sh" 2>"$out.fetch"); then
	rendered=$(mktemp)
	if "$helm_dir/helm" template t "$src/deploy/helm/virtwatt" --set prometheus.rules.enabled=true \
		--show-only templates/prometheusrule.yaml >"$rendered" 2>"$out"; then
		check "the chart's PrometheusRule holds exactly the alerts' and recording rules' groups" \
			python3 - "$rendered" "$src/deploy/prometheus/virtwatt-alerts.yml" \
			"$src/deploy/prometheus/virtwatt-recording-rules.yml" <<'PY'
import sys, yaml
doc = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d)
want = [g for f in sys.argv[2:] for g in yaml.safe_load(open(f))["groups"]]
assert doc["kind"] == "PrometheusRule", doc["kind"]
assert doc["spec"]["groups"] == want, "groups differ"
yaml.safe_dump({"groups": doc["spec"]["groups"]}, open(sys.argv[1] + ".rules.yml", "w"))
PY
		check "promtool check rules on the chart's rendered PrometheusRule" \
			promtool check rules "$rendered.rules.yml"
		"$helm_dir/helm" template t "$src/deploy/helm/virtwatt" >"$rendered" 2>/dev/null
		check "rules off by default" sh -c "! grep -q 'kind: PrometheusRule' '$rendered'"
	else
		n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - helm template with rules on"
		sed 's/^/# /' "$out"
	fi
	rm -f "$rendered" "$rendered.rules.yml"
elif [ "${CI:-}" = true ]; then
	n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - helm: $(cat "$out.fetch")"
else
	n=$((n + 1)); echo "ok $n - chart's PrometheusRule # SKIP no helm ($(head -c 200 "$out.fetch"))"
fi
rm -f "$out.fetch"
if [ "$found" = 0 ]; then
	n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - no rules files found under $src"
fi
echo "1..$n"
[ "$failed" -eq 0 ]
