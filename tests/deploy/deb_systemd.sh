# The packages under the real systemd (sourced by deb_install.sh after its own checks: ok,
# notok, free_port, $src, $work, $tmp and debs[] are its). A Debian 12 container with systemd as
# PID 1 (the base image of podman_lib.sh plus systemd, built once as $vw_sd_image), the three
# .debs installed with apt as a user would (their Depends and Recommends from the mirror), each
# unit started by systemctl with every sandboxing line it has: active and not restarting, bpf
# accounting with no fallback, exe labels read (CAP_SYS_PTRACE through the sandbox), the daemon
# as the virtwatt user with exactly the unit's four capabilities, no denial in the journal, and
# a clean stop. The host's /proc is bound at /host/proc and passed as --host.procfs (a container
# has its own PID namespace: the unit's default /proc would be that one's, rightly warned of).
# Last, deploy/libvirt's tmpfiles layout survives the unit's start.
# Needs podman, runc, mmdebstrap: a failure under CI=true without them, else these lines skip.
. "$src/tests/deploy/podman_lib.sh"
vw_sd_image=localhost/virtwatt-test-systemd:bookworm
sd_ctr=vw-deb-systemd-$$
sd() { $podman exec "$sd_ctr" "$@"; }

sd_image() {
	$podman image exists $vw_sd_image && return 0
	vw_make_base "$work" || return 1
	mkdir -p "$tmp/sd-ctx"
	printf 'FROM %s\nRUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd systemd-sysv dbus curl && apt-get clean && rm -rf /var/lib/apt/lists/*\n' \
		$vw_base >"$tmp/sd-ctx/Containerfile"
	$podman build --network host -t $vw_sd_image "$tmp/sd-ctx"
}

sd_boot() { # systemd as PID 1, up and settled
	$podman run -d --name "$sd_ctr" --systemd=always --privileged --network host \
		-v /proc:/host/proc:ro $vw_sd_image /sbin/init >/dev/null || return 1
	for _ in $(seq 60); do
		case $(sd systemctl is-system-running 2>/dev/null) in
		running | degraded) return 0 ;;
		esac
		sleep 1
	done
	sd systemctl is-system-running
	return 1
}

sd_install() {
	for d in "${debs[@]}"; do $podman cp "$d" "$sd_ctr:/tmp/" || return 1; done
	sd sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/virtwatt-*.deb'
}

sd_scrape() { # PORT PATTERN: /metrics until a line matches PATTERN (30 s)
	for _ in $(seq 60); do
		curl -sf "http://127.0.0.1:$1/metrics" >"$tmp/sd-metrics" 2>/dev/null &&
			grep -qE "$2" "$tmp/sd-metrics" && return 0
		sleep 0.5
	done
	return 1
}

sd_unit_checks() { # UNIT PORT: the unit's daemon as systemd runs it
	local u=$1 port=$2 pid status
	pid=$(sd systemctl show -p MainPID --value "$u")
	status=$(sd cat "/proc/$pid/status" 2>&1)
	{
		echo "== $u: MainPID $pid"
		sd systemctl status --no-pager "$u"
		echo "$status" | grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):'
	} >"$tmp/out" 2>&1
	if [ "$(sd systemctl is-active "$u")" = active ] &&
		[ "$(sd systemctl show -p NRestarts --value "$u")" = 0 ] &&
		echo "$status" | grep -qE "^Uid:[[:space:]]+$(sd id -u virtwatt)[[:space:]]" &&
		echo "$status" | grep -qE '^CapEff:[[:space:]]+000000c000080004$' &&
		echo "$status" | grep -qE '^NoNewPrivs:[[:space:]]+1$' &&
		echo "$status" | grep -qE '^Seccomp:[[:space:]]+2$'; then
		ok "systemd runs $u: active, no restart, user virtwatt, CapEff = DAC_READ_SEARCH BPF PERFMON SYS_PTRACE, no_new_privs, a seccomp filter"
	else
		notok "systemd runs $u: active, no restart, user virtwatt, CapEff = DAC_READ_SEARCH BPF PERFMON SYS_PTRACE, no_new_privs, a seccomp filter"
	fi
}

if [ "$(id -u)" -ne 0 ] || ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
	if [ "${CI:-}" = true ]; then
		echo "podman or runc missing (deploy/install-deps.sh --test)" >"$tmp/out"
		notok "the packages under the real systemd"
	else
		echo "# SKIP the packages under the real systemd: podman or runc missing"
	fi
else
	vw_podman_setup "$tmp"
	sd_ok=1
	if sd_image >"$tmp/out" 2>&1; then ok "a Debian 12 image with systemd ($vw_sd_image)"; else notok "a Debian 12 image with systemd ($vw_sd_image)"; sd_ok=0; fi
	if [ $sd_ok = 1 ] && sd_boot >"$tmp/out" 2>&1; then ok "systemd up as PID 1 in a container"; else [ $sd_ok = 0 ] || notok "systemd up as PID 1 in a container"; sd_ok=0; fi
	if [ $sd_ok = 1 ] && sd_install >"$tmp/out" 2>&1; then ok "apt-get install the three .debs (their dependencies from the mirror)"; else [ $sd_ok = 0 ] || notok "apt-get install the three .debs (their dependencies from the mirror)"; sd_ok=0; fi
	if [ $sd_ok = 1 ]; then
		hp=$(free_port)
		gp=$(free_port)
		sd sed -i "s|^ARGS=.*|ARGS=\"--web.listen-address=127.0.0.1:$hp --host.procfs=/host/proc --monitor.interval=1s\"|" /etc/default/virtwatt-host
		sd sed -i "s|^ARGS=.*|ARGS=\"--web.listen-address=127.0.0.1:$gp --host.procfs=/host/proc --monitor.interval=1s\"|" /etc/default/virtwatt-guest
		# apt's postinst started both on the defaults (this container's /proc, port 28282,
		# maybe taken here): stopped, and the journal read from the second after
		sd systemctl stop virtwatt-host virtwatt-guest >"$tmp/out" 2>&1
		sleep 1
		since=$(sd date +%s)
		sleep 1
		sd systemctl start virtwatt-host virtwatt-guest >>"$tmp/out" 2>&1
		if sd_scrape "$hp" '^kepler_process_cpu_joules_total\{.*exe="/' &&
			grep -q '^virtwatt_cpu_accounting_info{method="bpf"' "$tmp/sd-metrics" &&
			! grep -q '^virtwatt_cpu_accounting_fallback' "$tmp/sd-metrics" &&
			grep -qE '^kepler_node_cpu_joules_total\{.*\} [0-9.e+]*[1-9]' "$tmp/sd-metrics"; then
			ok "virtwatt-host under systemd: bpf accounting (no fallback), exe labels, node energy counting"
		else
			{ grep -E '^(virtwatt_cpu_accounting|kepler_node_cpu)' "$tmp/sd-metrics"; sd journalctl -u virtwatt-host --no-pager; } >"$tmp/out" 2>&1
			notok "virtwatt-host under systemd: bpf accounting (no fallback), exe labels, node energy counting"
		fi
		sleep 3 # an interval or two more: anything the sandbox denies on the way is logged
		sd_unit_checks virtwatt-host "$hp"
		if sd_scrape "$gp" '^virtwatt_guest_power_source_info\{.*kind="estimated"'; then
			ok "virtwatt-guest under systemd (no passthrough) serves its estimated power"
		else
			sd journalctl -u virtwatt-guest --no-pager >"$tmp/out" 2>&1
			notok "virtwatt-guest under systemd (no passthrough) serves its estimated power"
		fi
		sd_unit_checks virtwatt-guest "$gp"
		sd journalctl --no-pager -o cat --since "@$since" -u virtwatt-host -u virtwatt-guest >"$tmp/sd-journal" 2>&1
		grep -E 'level=(error|warn)' "$tmp/sd-journal" | sed 's/^/# journal: /'
		if grep -E 'level=error|denied|not permitted|fallback|child PID namespace|EPERM|EACCES' "$tmp/sd-journal" >"$tmp/out"; then
			notok "the journal holds no error, denial or fallback from either daemon"
		else
			ok "the journal holds no error, denial or fallback from either daemon"
		fi
		sd systemctl stop virtwatt-host virtwatt-guest >"$tmp/out" 2>&1
		r=$(for u in virtwatt-host virtwatt-guest; do sd systemctl show -p Result -p ExecMainStatus --value "$u"; done | paste -sd' ')
		echo "Result, ExecMainStatus: $r" >>"$tmp/out"
		if [ "$r" = "success 0 success 0" ]; then
			ok "systemctl stop: both exit 0, Result=success"
		else
			notok "systemctl stop: both exit 0, Result=success"
		fi
		# deploy/libvirt/README.md's tmpfiles lines (QEMU's user as nobody: no libvirt here),
		# then the unit started: systemd gives a RuntimeDirectory the unit's user and mode, the
		# whole tree below when its owner differs, so the unit must name only what is its own.
		sed -n 's/^\(d[[:space:]]\+\/run\/virtwatt.*\)$/\1/p' "$src/deploy/libvirt/README.md" |
			sed 's/libvirt-qemu kvm     /nobody       nogroup /' >"$tmp/virtwatt-tmpfiles.conf"
		$podman cp "$tmp/virtwatt-tmpfiles.conf" "$sd_ctr:/etc/tmpfiles.d/virtwatt.conf" >"$tmp/out" 2>&1
		sd sh -c 'rm -rf /run/virtwatt && systemd-tmpfiles --create /etc/tmpfiles.d/virtwatt.conf &&
			systemctl start virtwatt-host && sleep 1 && systemctl is-active virtwatt-host &&
			stat -c "%U:%G %a %n" /run/virtwatt /run/virtwatt/*; systemctl stop virtwatt-host' >>"$tmp/out" 2>&1
		if grep -q '^nobody:nogroup 770 /run/virtwatt/channels$' "$tmp/out" &&
			grep -q '^virtwatt:virtwatt 2770 /run/virtwatt/lock$' "$tmp/out" &&
			grep -q '^virtwatt:virtwatt 755 /run/virtwatt/share$' "$tmp/out"; then
			ok "deploy/libvirt's tmpfiles layout survives the unit's start (QEMU's channels/ kept, lock/ 2770)"
		else
			cat "$tmp/virtwatt-tmpfiles.conf" >>"$tmp/out"
			notok "deploy/libvirt's tmpfiles layout survives the unit's start (QEMU's channels/ kept, lock/ 2770)"
		fi
	fi
	$podman rm -f -t 0 "$sd_ctr" >/dev/null 2>&1
fi
