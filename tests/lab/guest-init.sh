# SPDX-License-Identifier: MIT
# Stage 2 of the lab guest (tests/lab/vm.sh copies it into the run dir): runs
# as PID 1 in the host's overlaid root, sets up the rxe devices, runs the
# command with its output on the virtio-serial ports, leaves the exit status
# in /run/lab/rc and powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
. /run/lab/config

log() { echo "lab: $*" >/dev/ttyS0; }
finish() {
	sync
	echo "$1" >/run/lab/rc
	sync
	/bin/busybox poweroff -f
	echo o >/proc/sysrq-trigger
	sleep 60
}
fatal() {
	log "$*"
	echo "$*" >/run/lab/error
	finish 125
}

mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# the kernel's modules (for anything the initramfs did not load)
mkdir -p "/lib/modules/$KVER" && mount --bind "$KMODS" "/lib/modules/$KVER" ||
	fatal "cannot bind the modules of $KVER"
i=0
for d in "${SHARES[@]}"; do
	mkdir -p "$d" 2>/dev/null
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=mmap "share$i" "$d" ||
		fatal "cannot mount '$d'"
	i=$((i + 1))
done
hostname penny-lab
ip link set lo up

# Under emulation every program started costs a tenth of a second or more:
# what the shell can do itself (read, echo, loops) it does.
uptime_s() { local u _; read -r u _ </proc/uptime; echo "$u"; }
port() {
	local p n
	for p in /sys/class/virtio-ports/*; do
		read -r n <"$p/name" 2>/dev/null && [ "$n" = "$1" ] && { echo "/dev/${p##*/}"; return 0; }
	done
	return 1
}
for ((i = 0; i < 50; i++)); do
	OUT=$(port lab.stdout) && ERR=$(port lab.stderr) && [ -e "$OUT" ] && [ -e "$ERR" ] && break
	sleep 0.1
done
[ -e "${OUT:-}" ] && [ -e "${ERR:-}" ] || fatal "no virtio-serial ports"

# Two rxe devices on the ends of one veth pair emulate two NICs on two hosts,
# but both addresses are local, so traffic between them would go through lo
# and rxe would never see it (QP RTR fails).  Policy routing sends it over the
# veth wire; accept_local and rp_filter=0 take it in on the other end.
nolocal() {
	local k
	for k in all default "$@"; do
		echo 1 >"/proc/sys/net/ipv4/conf/$k/accept_local"
		echo 0 >"/proc/sys/net/ipv4/conf/$k/rp_filter"
	done
}
# rxe sends a burst of packets per message (an 8 MiB read answer is 8192 of
# them at MTU 1024); the default backlog of 1000 drops most of it, and the
# 6.1 rxe's read retry path then completes work requests wrongly (a WARN in
# rxe_completer, then flushed errors).  A real NIC paces its traffic.
echo 100000 >/proc/sys/net/core/netdev_max_backlog
devs=() netdevs=() ips=() pairs=()
case $MODE in
rxe)
	for ((k = 0; k < COUNT; k++)); do
		# the dummy module makes dummy0 itself
		ip link show "dummy$k" >/dev/null 2>&1 || ip link add "dummy$k" type dummy ||
			fatal "cannot add dummy$k"
		[ -n "$NETMTU" ] && ip link set "dummy$k" mtu "$NETMTU"
		ip addr add "10.1.$k.1/24" dev "dummy$k" && ip link set "dummy$k" up ||
			fatal "cannot configure dummy$k"
		devs+=("rxe$k") netdevs+=("dummy$k") ips+=("10.1.$k.1")
	done
	;;
pairs)
	# every pair made and configured by one ip -batch; traffic only starts
	# after nolocal
	for ((k = 0; k < COUNT; k++)); do
		a=veth$((2 * k)) b=veth$((2 * k + 1)) ia=10.0.$k.1 ib=10.0.$k.2
		[ $k = 0 ] && echo "rule add pref 1000 lookup local" && echo "rule del pref 0"
		echo "link add $a type veth peer name $b"
		[ -n "$NETMTU" ] && echo "link set $a mtu $NETMTU" && echo "link set $b mtu $NETMTU"
		cat <<EOF
addr add $ia/24 dev $a
addr add $ib/24 dev $b
link set $a up
link set $b up
rule add pref 50 iif $a lookup local
rule add pref 50 iif $b lookup local
rule add pref 100 from $ia to $ib lookup $((100 + 2 * k))
route add $ib dev $a src $ia table $((100 + 2 * k))
rule add pref 100 from $ib to $ia lookup $((101 + 2 * k))
route add $ia dev $b src $ib table $((101 + 2 * k))
EOF
	done >/run/pairs.ip
	ip -batch /run/pairs.ip || fatal "cannot configure the veth pairs"
	for ((k = 0; k < COUNT; k++)); do
		a=veth$((2 * k)) b=veth$((2 * k + 1)) ia=10.0.$k.1 ib=10.0.$k.2
		nolocal "$a" "$b"
		devs+=("rxe$((2 * k))" "rxe$((2 * k + 1))") netdevs+=("$a" "$b") ips+=("$ia" "$ib")
		pairs+=("rxe$((2 * k)):rxe$((2 * k + 1))")
	done
	nolocal
	;;
none) ;;
*) fatal "unknown mode '$MODE'" ;;
esac
# one after another: the kernel numbers the devices in this order, and
# ibv_get_device_list lists them so (rxe0 before rxe1)
for i in "${!devs[@]}"; do
	rdma link add "${devs[$i]}" type rxe netdev "${netdevs[$i]}" ||
		fatal "cannot add ${devs[$i]} on ${netdevs[$i]}"
done
# RoCE needs a GID: wait until each port is ACTIVE and index 1 (the
# IPv4-mapped RoCE v2 GID) is filled.
for d in "${devs[@]}"; do
	ok=0
	for ((i = 0; i < 200; i++)); do
		st="" g=""
		read -r st <"/sys/class/infiniband/$d/ports/1/state" 2>/dev/null
		read -r g <"/sys/class/infiniband/$d/ports/1/gids/1" 2>/dev/null
		if [[ $st == *ACTIVE* ]] && [ -n "$g" ] &&
			[ "$g" != 0000:0000:0000:0000:0000:0000:0000:0000 ]; then
			ok=1
			break
		fi
		sleep 0.05
	done
	[ "$ok" = 1 ] || fatal "$d: port 1 not ACTIVE with GID index 1 after 10 s"
done

echo "start $(uptime_s)" >/run/lab/times
log "ready at $(uptime_s) s: ${devs[*]}"
(
	set +u
	. /run/lab/env 2>/dev/null
	if [ -n "$PYTHON3" ] && [ -x "$PYTHON3" ]; then
		mkdir -p /run/lab-bin && ln -sf "$PYTHON3" /run/lab-bin/python3 &&
			export PATH=/run/lab-bin:$PATH
	fi
	export LAB_GUEST=1 LAB_DEVS="${devs[*]}" LAB_NETDEVS="${netdevs[*]}" LAB_IPS="${ips[*]}"
	export LAB_PAIRS="${pairs[*]}"
	cd "$CWD" 2>/dev/null || cd /
	exec bash -c "$(cat /run/lab/cmd)"
) </dev/null >"$OUT" 2>"$ERR"
rc=$?
echo "end $(uptime_s)" >>/run/lab/times
log "command exited $rc"
finish "$rc"
