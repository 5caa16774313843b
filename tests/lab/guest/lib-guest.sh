# SPDX-License-Identifier: MIT
# Sourced by guest-side TAP scripts (run through lab_tap): the TAP helpers of
# tests/lib.sh, numbering continued from the host's test file, and helpers for
# perftest pairs.  End with guest_done (no plan: the host file prints it).
. "$(dirname "${BASH_SOURCE[0]}")/../../lib.sh"
[ "${LAB_GUEST:-}" = 1 ] || { echo "not in the lab guest (run through tests/lab/vm.sh)" >&2; exit 125; }
TEST_N=${LAB_TAP_BASE:-0}

guest_done() { [ "$TEST_FAILED" -eq 0 ]; }

# Every check also says how long it took in the guest (the lab is slow:
# this is where the minutes go), from bash's clock: no process started
# (a fork and exec under emulation costs a tenth of a second or more).
eval "_lab_$(declare -f test_expect_success)"
test_expect_success() {
	local t0=${EPOCHREALTIME/[.,]/} t
	_lab_test_expect_success "$@"
	t=$(((${EPOCHREALTIME/[.,]/} - t0) / 100000))
	echo "#   ($((t / 10)).$((t % 10)) s)"
}

# warm_python: start python3 once in the background, so that the guest
# reads its files over 9p (seconds under emulation) while the checks before
# the first python3 run
warm_python() { python3 -c "import json" >/dev/null 2>&1 & }

# Under emulation every process costs: a fork and exec of cat or sleep took
# 0.11 s of the guest (16 cats 1.8 s; a read 0.007 s), taken from the
# vCPUs the job it waits for runs on.  Loops and counters here start none.
# nap SECONDS: sleep as a builtin (a read that times out on a FIFO that no
# one writes, opened only for the read)
NAP_FIFO=$TRASH/.nap
mkfifo "$NAP_FIFO" || exit 1
nap() {
	local x
	read -rt "$1" x <>"$NAP_FIFO"
	return 0
}
# hwc DEV NAME: the rxe device's hw counter NAME (port 1), on stdout
hwc() {
	local v
	read -r v <"/sys/class/infiniband/$1/ports/1/hw_counters/$2" && echo "$v"
}

# GID index 1 of a device, as sysfs prints it
gid1() { cat "/sys/class/infiniband/$1/ports/1/gids/1"; }

# The IPv4-mapped GID sysfs shows for a dotted address
v4gid() {
	local IFS=. a b c d
	read -r a b c d <<<"$1"
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$a" "$b" "$c" "$d"
}

# A rendezvous port for one job: below the kernel's ephemeral range (from
# 32768 by default), where a live outgoing connection of an earlier job can
# hold the port and make the listen fail ("Address already in use").
rand_port() { echo $((20000 + RANDOM % 12000)); }

# wait_listen PORT: until a TCP listener is on PORT (at most 10 s), read
# from the kernel's tables (state 0A: LISTEN) without starting a process
wait_listen() {
	local i f sl addr rem st rest port
	printf -v port '%04X' "$1"
	for ((i = 0; i < 100; i++)); do
		for f in /proc/net/tcp /proc/net/tcp6; do
			[ -r "$f" ] || continue
			while read -r sl addr rem st rest; do
				[ "$st" = 0A ] && [ "${addr##*:}" = "$port" ] && return 0
			done <"$f"
		done
		nap 0.1
	done
	return 1
}

# perftest_pair TOOL SERVER_DEV CLIENT_DEV SERVER_ADDR ARGS...: run the server
# in the background and the client against it; the client's output is on
# stdout, the server's in srv.out; both bounded by 60 s.
perftest_pair() {
	local tool=$1 sdev=$2 cdev=$3 addr=$4 rc srv
	shift 4
	timeout 60 "$tool" -d "$sdev" -x 1 "$@" >srv.out 2>&1 &
	srv=$!
	wait_listen 18515
	timeout 60 "$tool" -d "$cdev" -x 1 "$@" "$addr"
	rc=$?
	wait "$srv" || rc=$((rc ? rc : 1))
	return "$rc"
}

# Average bandwidth (MB/s) from a perftest _bw report on stdin
bw_avg() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 {v = $4} END {if (v == "") exit 1; print v}'; }

# topo_file HOST DEV0 DEV1: a `penny topo --save` file of a node with two GPUs,
# GPU k next to (PIX) NIC k, whose RDMA device is DEVk (port 1, ACTIVE)
topo_file() {
	python3 - "$@" <<-'PY'
	import json, sys
	host, devs = sys.argv[1], sys.argv[2:]
	gpus = [{"name": "GPU%d" % g, "index": g, "pci_busid": "0000:%02x:00.0" % (0x18 + g),
	         "numa": 0, "cpus": "0-1"} for g in range(2)]
	nics = [{"name": "NIC%d" % k, "device": d, "pci_busid": "0000:%02x:00.0" % (0x19 + k),
	         "numa": 0, "cpus": "0-1", "ports": [{"port": 1, "state": "ACTIVE",
	         "phys_state": "LinkUp", "rate_gbps": 10, "link_layer": "Ethernet"}]}
	        for k, d in enumerate(devs)]
	m = {}
	for g in range(2):
	    m["GPU%d" % g] = {"GPU%d" % h: "X" if g == h else "SYS" for h in range(2)}
	    m["GPU%d" % g].update({"NIC%d" % k: "PIX" if g == k else "SYS" for k in range(2)})
	rails = [{"gpu": "GPU%d" % g, "nics": ["NIC%d" % g], "class": "PIX"} for g in range(2)]
	json.dump({"version": 1, "host": host, "source": "live", "gpus": gpus, "nics": nics,
	           "matrix": m, "rails": rails}, sys.stdout, indent=1)
	PY
}
