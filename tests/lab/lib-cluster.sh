# SPDX-License-Identifier: MIT
# A small cluster on this machine for the lab tests (tests/lab/t018*.sh):
# hosts are network namespaces with their own host names on one bridge, a
# real munged, slurmctld and one slurmd per host (Debian's slurm-wlm, started
# by hand: systemd is not PID 1 here), and mpirun reaching them through a
# plm_rsh_agent.  Everything lives in a private mount namespace (a tmpfs on
# /run for the namespaces' names and MUNGE's socket, this run's /etc/hosts
# and /etc/slurm bound over the real ones) and in $TRASH, so runs in
# parallel never meet and nothing is left behind.
#
#   cluster_private "$@"    first line of a test: run it again in a private
#                           mount namespace (or skip it, loudly)
#   . lib.sh; . "$TOP/tests/lab/lib-cluster.sh"
#   cluster_need CMD...     skip the test file, loudly, when a command is missing
#   cluster_net N           hosts n1..nN (10.77.0.1..N) and ctl (10.77.0.254)
#   cluster_munge           munged on the default socket, a fresh key
#   cluster_slurm           slurmctld on ctl, slurmd on n1..nN; waits for idle
#                           (CLUSTER_SLURM_CONF: more slurm.conf lines)
#   cluster_agent           prints the path of an rsh agent for mpirun
#   on HOST CMD...          run CMD on HOST (its network and host name)
#   cluster_down            stop everything (installed as the EXIT trap)

cluster_private() {
	[ -n "${LAB_PRIVATE_MOUNTS:-}" ] && return 0
	if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
		LAB_PRIVATE_MOUNTS=1 exec unshare -m --propagation private bash "$0" "$@"
	fi
	echo "# LOUD: lab skipped: needs root and unshare -m (a private mount namespace)"
	echo "ok 1 # skip cluster: needs root and unshare -m"
	echo "1..1"
	exit 0
}

cluster_skip() {
	echo "# LOUD: lab skipped: $1"
	test_skip cluster "$1"
	test_done
	exit 0
}

cluster_need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null ||
			cluster_skip "$c is not installed (make setup-test installs it)"
	done
}

CLUSTER_HOSTS=()
CLUSTER_PIDS=()

on() {
	local h=$1
	shift
	nsenter --net=/run/netns/"$h" --uts=/run/cluster-uts/"$h" "$@"
}

# cluster_net N: the hosts, their bridge, their names in /etc/hosts
cluster_net() {
	local n=$1 i h
	mount -t tmpfs -o mode=755 tmpfs /run || cluster_skip "cannot mount a tmpfs on /run"
	mkdir -p /run/netns /run/munge /run/cluster-uts "$TRASH/cluster" || return 1
	printf '127.0.0.1 localhost\n10.77.0.254 ctl\n' >"$TRASH/cluster/hosts"
	CLUSTER_HOSTS=(ctl)
	for ((i = 1; i <= n; i++)); do
		CLUSTER_HOSTS+=("n$i")
		echo "10.77.0.$i n$i" >>"$TRASH/cluster/hosts"
	done
	mount --bind "$TRASH/cluster/hosts" /etc/hosts || return 1
	for h in "${CLUSTER_HOSTS[@]}"; do
		ip netns add "$h" || return 1
		ip -n "$h" link set lo up
		# a host name of its own: a UTS namespace kept by a bind mount
		: >/run/cluster-uts/"$h"
		unshare --uts=/run/cluster-uts/"$h" hostname "$h" || return 1
	done
	ip -n ctl link add br0 type bridge && ip -n ctl link set br0 up &&
		ip -n ctl addr add 10.77.0.254/24 dev br0 || return 1
	for ((i = 1; i <= n; i++)); do
		ip link add e0 netns "n$i" type veth peer name p$i netns ctl &&
			ip -n ctl link set p$i master br0 && ip -n ctl link set p$i up &&
			ip -n "n$i" addr add "10.77.0.$i/24" dev e0 && ip -n "n$i" link set e0 up ||
			return 1
	done
}

cluster_munge() {
	local d=$TRASH/cluster i
	dd if=/dev/urandom of="$d/munge.key" bs=1024 count=1 2>/dev/null && chmod 400 "$d/munge.key" &&
		setpriv --pdeathsig KILL munged -F -f --socket=/run/munge/munge.socket.2 \
			--key-file="$d/munge.key" --pid-file="$d/munged.pid" \
			--log-file="$d/munged.log" --seed-file="$d/munged.seed" 2>"$d/munged.err" &
	CLUSTER_PIDS+=($!)
	for ((i = 0; i < 50; i++)); do
		[ -S /run/munge/munge.socket.2 ] && return 0
		sleep 0.1
	done
	cluster_skip "munged does not start: $(tail -n 1 "$d/munged.err")"
}

# cluster_slurm: one slurmd per host; every node idle within 20 s, or skip
cluster_slurm() {
	local d=$TRASH/cluster h i nodes=n[1-$((${#CLUSTER_HOSTS[@]} - 1))]
	mkdir -p "$d/etc" "$d/state" "$d/log" || return 1
	for h in "${CLUSTER_HOSTS[@]:1}"; do mkdir -p "$d/spool/$h"; done
	cat >"$d/etc/slurm.conf" <<-EOF
	ClusterName=lab
	SlurmctldHost=ctl(10.77.0.254)
	AuthType=auth/munge
	CredType=cred/munge
	SlurmUser=root
	SlurmdUser=root
	StateSaveLocation=$d/state
	SlurmdSpoolDir=$d/spool/%n
	SlurmctldPidFile=$d/slurmctld.pid
	SlurmdPidFile=$d/slurmd.%n.pid
	SlurmctldLogFile=$d/log/slurmctld.log
	SlurmdLogFile=$d/log/slurmd.%n.log
	ProctrackType=proctrack/pgid
	TaskPlugin=task/none
	JobAcctGatherType=jobacct_gather/none
	AccountingStorageType=accounting_storage/none
	JobCompType=jobcomp/none
	SchedulerType=sched/backfill
	SelectType=select/cons_tres
	SelectTypeParameters=CR_CPU
	MpiDefault=none
	ReturnToService=2
	MailProg=/bin/true
	NodeName=$nodes CPUs=2 State=UNKNOWN
	PartitionName=lab Nodes=$nodes Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
	${CLUSTER_SLURM_CONF:-}
	EOF
	mount --bind "$d/etc" /etc/slurm 2>/dev/null ||
		cluster_skip "no /etc/slurm to bind this run's slurm.conf over (slurm-wlm not installed?)"
	# the daemons die with this test, whatever ends it
	nsenter --net=/run/netns/ctl --uts=/run/cluster-uts/ctl setpriv --pdeathsig KILL \
		slurmctld -D -i >"$d/log/slurmctld.out" 2>&1 &
	CLUSTER_PIDS+=($!)
	for h in "${CLUSTER_HOSTS[@]:1}"; do
		nsenter --net=/run/netns/"$h" --uts=/run/cluster-uts/"$h" setpriv --pdeathsig KILL \
			slurmd -D -N "$h" >"$d/log/slurmd.$h.out" 2>&1 &
		CLUSTER_PIDS+=($!)
	done
	for ((i = 0; i < 100; i++)); do
		[ "$(on ctl sinfo -h -o '%T %D' 2>/dev/null)" = "idle $((${#CLUSTER_HOSTS[@]} - 1))" ] &&
			return 0
		sleep 0.2
	done
	tail -n 3 "$d"/log/*.log | sed 's/^/# /'
	cluster_skip "Slurm's nodes were not idle within 20 s: $(on ctl sinfo -h 2>&1 | head -n 1)"
}

# cluster_agent: mpirun's plm_rsh_agent ("AGENT HOST COMMAND..."): the
# command on HOST, as ssh would run it there
cluster_agent() {
	local a=$TRASH/cluster/agent
	cat >"$a" <<-'EOF'
	#!/bin/sh
	host=$1
	shift
	exec nsenter --net=/run/netns/"$host" --uts=/run/cluster-uts/"$host" sh -c "$*"
	EOF
	chmod 755 "$a" && echo "$a"
}

cluster_down() {
	local h p
	[ -n "${CLUSTER_DOWN:-}" ] && return 0
	CLUSTER_DOWN=1
	on ctl timeout 5 scontrol shutdown >/dev/null 2>&1
	for h in "${CLUSTER_HOSTS[@]}"; do
		for p in $(ip netns pids "$h" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	done
	for p in "${CLUSTER_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	for h in "${CLUSTER_HOSTS[@]}"; do ip netns del "$h" 2>/dev/null; done
}
[ -n "${TRASH:-}" ] && trap 'cluster_down; rm -rf "$TRASH"' EXIT
