#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# vm.sh - run one command in a throw-away qemu guest that has soft-RoCE
# (rdma_rxe) verbs devices.  The guest boots Debian's stock kernel (software
# emulation, no network card), sees the host's whole file system read-only
# (tmpfs overlay on top) and the checkout read-write at the same path, so the
# binaries built here run there unchanged.  Output is streamed back, the exit
# status is the command's.
#
# usage: tests/lab/vm.sh [OPTIONS] [--] COMMAND...
#   --rxe N        N rxe devices rxe0.., each on its own dummy netdev (default: 1)
#   --pairs N      N veth pairs with rxe on both ends: rxe(2k) on veth(2k) 10.0.k.1
#                  and rxe(2k+1) on veth(2k+1) 10.0.k.2 -- two hosts x N rails
#   --none         rdma modules loaded, no rxe device
#   --netmtu N     MTU of the netdevs (rxe's active MTU follows it; default 1500)
#   --timeout S    whole-VM timeout in seconds (default 600)
#   --mem MB       guest memory (default 1536);  --smp N  guest CPUs (default 2)
#   --share DIR    share DIR read-write at the same path too (repeatable)
#   --setup        install packages, fetch the kernel, build the initramfs; exit
#   --check        exit 0 when the lab can run here, else print why and exit 77
#   -v             timings and the guest console tail on stderr
# In the guest: LAB_GUEST=1, LAB_DEVS="rxe0 rxe1 ..", LAB_NETDEVS, LAB_IPS (same
# order), LAB_PAIRS="rxe0:rxe1 rxe2:rxe3" (--pairs), plus the caller's exported
# environment.  COMMAND runs under "bash -c" in the caller's directory.
# Exit status: the command's; 124 the VM timed out; 125 the lab failed
# (setup, boot); 77 with --check: the lab cannot run here.
#
# Environment: PENNY_LAB_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/penny-lab)
# holds the kernel and initramfs, keyed by kernel version; PENNY_LAB=skip
# makes --check fail; PENNY_LAB_ACCEL (default tcg: the paravirtual KVM of
# some hosts cannot run a stock kernel); PENNY_LAB_BOOT_TIMEOUT (default 240):
# seconds the guest has to reach the command before it is booted once more.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
CACHE=${PENNY_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/penny-lab}
ACCEL=${PENNY_LAB_ACCEL:-tcg}

mode=rxe count=1 netmtu="" tmo=600 mem=1536 smp=2 verbose=0 action=run
shares=()
die() { echo "vm.sh: $*" >&2; exit 125; }
usage() { sed -n '/^# usage:/,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "vm.sh: $1 needs a positive number" >&2; exit 2; }; }

while [ $# -gt 0 ]; do
	case $1 in
	--rxe) posint "$1" "${2:-}"; mode=rxe count=$2; shift ;;
	--pairs) posint "$1" "${2:-}"; mode=pairs count=$2; shift ;;
	--none) mode=none count=0 ;;
	--netmtu) posint "$1" "${2:-}"; netmtu=$2; shift ;;
	--timeout) posint "$1" "${2:-}"; tmo=$2; shift ;;
	--mem) posint "$1" "${2:-}"; mem=$2; shift ;;
	--smp) posint "$1" "${2:-}"; smp=$2; shift ;;
	--share) [ -d "${2:-}" ] || { echo "vm.sh: --share needs a directory" >&2; exit 2; }
		shares+=("$(cd "$2" && pwd -P)"); shift ;;
	--setup) action=setup ;;
	--check) action=check ;;
	-v) verbose=1 ;;
	-h|--help) usage ;;
	--) shift; break ;;
	-*) echo "vm.sh: unknown option '$1'" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ "$action" != run ] || [ $# -gt 0 ] || usage
boot_tmo=${PENNY_LAB_BOOT_TIMEOUT:-240}
[[ $boot_tmo =~ ^[1-9][0-9]*$ ]] || { echo "vm.sh: PENNY_LAB_BOOT_TIMEOUT needs a positive number of seconds" >&2; exit 2; }
[ "$boot_tmo" -lt "$tmo" ] || boot_tmo=$tmo

# ------------------------------------------------------------------ setup --
# Everything setup makes lives in $CACHE (outside the tree), under a lock so
# concurrent runs (make test and make asan) share one download.
need_cmds=(qemu-system-x86_64 cpio depmod modprobe xz ip rdma ibv_devinfo ib_write_bw
	dpkg-deb apt-get flock timeout)

install_missing() {
	local missing=() c
	for c in "${need_cmds[@]}"; do command -v "$c" >/dev/null || missing+=("$c"); done
	dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q "ok installed" ||
		missing+=(busybox-static)
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null; then
		echo "missing ${missing[*]} and cannot install (not root, no sudo)"
		return 1
	fi
	bash "$top/tests/install-deps.sh" test >&2 || { echo "installing ${missing[*]} failed"; return 1; }
	for c in "${need_cmds[@]}"; do
		command -v "$c" >/dev/null || { echo "missing '$c' after installing packages"; return 1; }
	done
}

# linux-image-amd64's current dependency; apt-cache takes seconds, so the
# answer is kept in $CACHE until apt's lists or package cache change.
kernel_pkg() {
	local f=$CACHE/kernel-pkg p
	if [ -s "$f" ] && [ -z "$(find /var/lib/apt/lists /var/cache/apt/pkgcache.bin \
		-maxdepth 0 -newer "$f" 2>/dev/null)" ]; then
		cat "$f"
		return 0
	fi
	p=$(apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/{print $2; exit}')
	[ -n "$p" ] && echo "$p" >"$f.tmp" && mv "$f.tmp" "$f"
	echo "$p"
}

# The kernel: linux-image-amd64's current dependency, fetched with apt-get
# download; offline, the newest cached one.  Prints the kernel's directory.
fetch_kernel() {
	local pkg dir deb
	pkg=$(kernel_pkg)
	if [ -n "$pkg" ] && [ -s "$CACHE/$pkg/ok" ]; then
		echo "$CACHE/$pkg"
		return 0
	fi
	if [ -n "$pkg" ]; then
		dir=$CACHE/$pkg
		rm -rf "$dir" "$CACHE/dl"
		mkdir -p "$CACHE/dl"
		if (cd "$CACHE/dl" && apt-get download -q "$pkg") >&2 2>"$CACHE/dl/err"; then
			deb=$(ls "$CACHE"/dl/"$pkg"_*.deb 2>/dev/null | head -1)
			if [ -n "$deb" ] && mkdir -p "$dir/root" && dpkg-deb -x "$deb" "$dir/root" &&
				prepare_kernel "$dir"; then
				rm -rf "$CACHE/dl"
				echo "$pkg" >"$dir/ok"
				echo "$dir"
				return 0
			fi
		fi
		rm -rf "$dir"
	fi
	# offline or no apt lists: any kernel prepared before
	dir=$(ls -d "$CACHE"/linux-image-*/ok 2>/dev/null | sort -V | tail -1)
	if [ -n "$dir" ]; then
		echo "${dir%/ok}"
		return 0
	fi
	echo "cannot fetch the kernel package ${pkg:-linux-image-amd64}: $(tail -1 "$CACHE/dl/err" 2>/dev/null)"
	return 1
}

# modules.dep, and the uncompressed ELF vmlinux (qemu boots it through the PVH
# entry point; decompressing a bzImage under software emulation is slow).
prepare_kernel() {
	local dir=$1 kver bz off
	kver=$(ls "$dir/root/lib/modules" | head -1)
	[ -n "$kver" ] || return 1
	depmod -b "$dir/root" "$kver" || return 1
	bz=$(ls "$dir"/root/boot/vmlinuz-* | head -1)
	off=$(grep -abo $'\xfd7zXZ\x00' "$bz" | head -1 | cut -d: -f1)
	if [ -n "$off" ]; then
		# xz reports an error for the bytes after the stream: judge by the ELF magic
		tail -c +$((off + 1)) "$bz" | xz -dc >"$dir/vmlinux" 2>/dev/null
		[ "$(head -c4 "$dir/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ] || rm -f "$dir/vmlinux"
	fi
	[ -s "$dir/vmlinux" ] || cp "$bz" "$dir/vmlinux"
	echo "$kver" >"$dir/kver"
}

# Modules loaded by the initramfs, dependencies first.
initrd_modules=(virtio_pci virtio_console 9pnet_virtio 9p overlay veth dummy
	rdma_rxe ib_uverbs ib_umad rdma_ucm)

initrd_init() {
	cat <<'EOF'
#!/bin/busybox sh
# stage 1: load modules, mount the host's / read-only over 9p with a tmpfs
# overlay, switch_root into it and run the lab's stage 2 from the run dir.
B=/bin/busybox
$B mount -t proc proc /proc
$B mount -t sysfs sysfs /sys
$B mount -t devtmpfs devtmpfs /dev
fail() { echo "lab-init: $*" >/dev/ttyS0; $B poweroff -f; }
for m in $($B cat /lib/modules/order); do $B insmod /lib/modules/$m || fail "insmod $m"; done
O=trans=virtio,version=9p2000.L,msize=262144
$B mkdir -p /mnt/lower /mnt/rw /newroot
$B mount -t 9p -o $O,ro,cache=loose hostroot /mnt/lower || fail "mount hostroot"
$B mount -t tmpfs -o mode=755 tmpfs /mnt/rw
$B mkdir -p /mnt/rw/upper /mnt/rw/work
$B mount -t overlay -o lowerdir=/mnt/lower,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work \
	overlay /newroot || fail "mount overlay"
$B mount -t tmpfs -o mode=755 tmpfs /newroot/run
$B mkdir -p /newroot/run/lab
$B mount -t 9p -o $O,cache=none labrun /newroot/run/lab || fail "mount labrun"
for d in dev proc sys; do $B mount -o move /$d /newroot/$d || fail "move /$d"; done
exec $B switch_root /newroot /bin/bash /run/lab/stage2.sh
EOF
}

build_initrd() {
	local kdir=$1 kver root ir f m key list=""
	kver=$(cat "$kdir/kver")
	root=$kdir/root
	# the kernel's directory never changes: its module list is kept there
	key=$(echo "${initrd_modules[*]}" | md5sum | cut -c1-12)
	if [ -s "$kdir/modules-$key" ]; then
		list=$(cat "$kdir/modules-$key")
	else
		for m in "${initrd_modules[@]}"; do
			f=$(modprobe -d "$root" -S "$kver" --show-depends "$m" 2>/dev/null |
				awk '$1 == "insmod" {print $2}')
			[ -n "$f" ] || { echo "module $m not found in $kver"; return 1; }
			list+="$f"$'\n'
		done
		list=$(printf '%s' "$list" | awk 'NF && !seen[$0]++')
		echo "$list" >"$kdir/modules-$key.tmp" && mv "$kdir/modules-$key.tmp" "$kdir/modules-$key"
	fi
	key=$( (initrd_init; echo "$list"; md5sum </bin/busybox) | md5sum | cut -c1-12)
	if [ ! -s "$kdir/initrd-$key.cpio" ]; then
		ir=$(mktemp -d "$kdir/initrd.XXXXXX") || return 1
		mkdir -p "$ir"/{bin,dev,proc,sys,lib/modules}
		cp /bin/busybox "$ir/bin/busybox" || { echo "no /bin/busybox"; return 1; }
		initrd_init >"$ir/init"
		chmod 755 "$ir/init"
		while read -r f; do
			m=$(basename "$f")
			case $m in
			*.ko.xz) xz -dc "$f" >"$ir/lib/modules/${m%.xz}"; m=${m%.xz} ;;
			*.ko.zst) zstd -qdc "$f" >"$ir/lib/modules/${m%.zst}"; m=${m%.zst} ;;
			*) cp "$f" "$ir/lib/modules/" ;;
			esac
			echo "$m" >>"$ir/lib/modules/order"
		done <<<"$list"
		(cd "$ir" && find . | cpio -o -H newc --quiet) >"$kdir/initrd-$key.cpio.tmp" &&
			mv "$kdir/initrd-$key.cpio.tmp" "$kdir/initrd-$key.cpio"
		rm -rf "$ir"
		find "$kdir" -maxdepth 1 -name 'initrd-*.cpio' ! -name "initrd-$key.cpio" -delete
	fi
	[ -s "$kdir/initrd-$key.cpio" ] || { echo "cannot build the initramfs"; return 1; }
	echo "$kdir/initrd-$key.cpio"
}

# Sets KDIR, KVER, INITRD; on failure prints the reason and returns 1.
setup() {
	local out
	if [ "${PENNY_LAB:-}" = skip ]; then echo "PENNY_LAB=skip"; return 1; fi
	mkdir -p "$CACHE" || { echo "cannot create '$CACHE'"; return 1; }
	exec 9>"$CACHE/.lock"
	flock -w 900 9 || { echo "cannot lock '$CACHE/.lock'"; return 1; }
	install_missing || return 1
	KDIR=$(fetch_kernel) || { echo "$KDIR"; return 1; }
	KVER=$(cat "$KDIR/kver")
	out=$(build_initrd "$KDIR") || { echo "$out"; return 1; }
	INITRD=$out
	exec 9>&-
	qemu-system-x86_64 --version >/dev/null 2>&1 || { echo "qemu-system-x86_64 does not run"; return 1; }
}

case $action in
setup) why=$(setup) || die "lab setup failed: $why"; exit 0 ;;
check) why=$(setup) || { echo "$why"; exit 77; }; exit 0 ;;
esac
setup >"${TMPDIR:-/tmp}/penny-lab-setup.$$" || {
	why=$(cat "${TMPDIR:-/tmp}/penny-lab-setup.$$"); rm -f "${TMPDIR:-/tmp}/penny-lab-setup.$$"
	die "lab setup failed: $why"
}
rm -f "${TMPDIR:-/tmp}/penny-lab-setup.$$"

# ---------------------------------------------------------------- one run --
cwd=$(pwd -P)
mkdir -p "$CACHE/runs" || die "cannot create '$CACHE/runs'"
RUN=$(mktemp -d "$CACHE/runs/run.XXXXXX") || die "mktemp failed"
qpid="" tails=()
cleanup() {
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
	for p in "${tails[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# the checkout is always shared read-write; the caller's extra --share dirs too
shares=("$top" "${shares[@]}")
printf '%s' "$*" >"$RUN/cmd"
# The caller's python3 as the file it runs: a version manager's shim (pyenv's
# is a shell script that runs a few hundred programs) costs tens of seconds
# per start under emulation; the guest puts this one first in its PATH.
py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || py=""
export -p | grep -vE '^declare -x (BASH_[A-Z_]*|SHLVL|PWD|OLDPWD|HOSTNAME|_|SHELLOPTS|BASHOPTS|DISPLAY|SSH_[A-Z_]*|XDG_RUNTIME_DIR)=' >"$RUN/env"
{
	printf 'KVER=%q\nKMODS=%q\nMODE=%q\nCOUNT=%q\nNETMTU=%q\nCWD=%q\nPYTHON3=%q\n' \
		"$KVER" "$KDIR/root/lib/modules/$KVER" "$mode" "$count" "$netmtu" "$cwd" "$py"
	printf 'SHARES=('
	printf '%q ' "${shares[@]}"
	printf ')\n'
} >"$RUN/config"
cp "$here/guest-init.sh" "$RUN/stage2.sh" || die "no guest-init.sh"
: >"$RUN/stdout"
: >"$RUN/stderr"

esc() { printf '%s' "${1//,/,,}"; } # qemu option values double their commas
# Under emulation the kernel falls back to the HPET and every clock_gettime
# becomes a system call plus an emulated device read; the emulated TSC is
# monotonic, so let the vDSO use it.  On a busy host the emulated CPU may
# not run for the kernel's check that the timer reaches the IO-APIC, which
# then panics ("IO-APIC + timer doesn't work"): skip that check.
clock="tsc=reliable clocksource=tsc no_timer_check"
[ "$ACCEL" = tcg ] || clock=""
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
	-machine pc -accel "$ACCEL" -cpu max -m "$mem" -smp "$smp"
	-kernel "$KDIR/vmlinux" -initrd "$INITRD"
	-append "console=ttyS0 panic=-1 quiet loglevel=4 mitigations=off $clock"
	-serial "file:$RUN/console.log"
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$(esc "$RUN"),mount_tag=labrun,security_model=none,multidevs=remap"
	-device virtio-serial-pci,id=vser
	-chardev "file,id=gout,append=on,path=$(esc "$RUN/stdout")"
	-device virtserialport,bus=vser.0,chardev=gout,name=lab.stdout
	-chardev "file,id=gerr,append=on,path=$(esc "$RUN/stderr")"
	-device virtserialport,bus=vser.0,chardev=gerr,name=lab.stderr)
for i in "${!shares[@]}"; do
	qemu+=(-virtfs "local,path=$(esc "${shares[$i]}"),mount_tag=share$i,security_model=none,multidevs=remap")
done
# No -netdev/-nic (and -nodefaults): the guest has lo, veth and dummy devices
# only, nothing it sends can leave it.

# One boot: qemu under the time left, the output streamed, and a watchdog
# that stops a guest which has not reached the command (no "start" line in
# $RUN/times) after $boot_tmo seconds.  Sets qrc (qemu's status) and broken.
boot() {
	local limit=$1 wd st np p
	rm -f "$RUN/times" "$RUN/rc" "$RUN/error" "$RUN/stalled"
	timeout -k 5 "$limit" "${qemu[@]}" </dev/null 2>"$RUN/qemu.err" &
	qpid=$!
	# Output comes through virtio-serial ports appended to regular files (a FIFO
	# whose reader went away was seen to hang qemu); tail -f streams them.
	tail -q -s 0.2 -c +1 --pid="$qpid" -f "$RUN/stdout" &
	tails+=($!)
	tail -q -s 0.2 -c +1 --pid="$qpid" -f "$RUN/stderr" >&2 &
	tails+=($!)
	# the watchdog keeps no descriptor of the caller's (a pipe's reader
	# would wait for it) and ends within a second of the VM
	(
		exec </dev/null >/dev/null 2>&1
		for ((s = 0; s < boot_tmo; s++)); do
			sleep 1
			[ -e "$RUN/times" ] && exit 0
			kill -0 "$qpid" || exit 0
		done
		[ -e "$RUN/times" ] || { : >"$RUN/stalled"; kill "$qpid"; }
	) &
	wd=$!
	qrc="" broken=0
	while :; do
		wait -n -p done_pid "$qpid" "${tails[@]}"
		st=$?
		if [ "${done_pid:-}" = "$qpid" ]; then
			qrc=$st
			qpid=""
			break
		fi
		# a streamer failed (its reader went away, e.g. "| head"): stop the VM
		if [ "$st" -ne 0 ]; then
			broken=1
			kill "$qpid" 2>/dev/null
		fi
		np=()
		for p in "${tails[@]}"; do [ "$p" != "${done_pid:-}" ] && np+=("$p"); done
		tails=("${np[@]}")
		[ -n "${done_pid:-}" ] || break
	done
	wait "${tails[@]}" 2>/dev/null
	tails=()
	kill "$wd" 2>/dev/null
	wait "$wd" 2>/dev/null
}

# A guest that never reaches the command (a boot that hangs under emulation
# on a busy host was seen once in CI: 900 s, no output) is booted once more
# in the time left; the first boot's console tail says where it stopped.
t0=$(date +%s.%N)
s0=$(date +%s)
boot "$tmo"
left=$((tmo - ($(date +%s) - s0)))
if [ -e "$RUN/stalled" ] && [ "$broken" = 0 ] && [ "$left" -gt 60 ]; then
	echo "# LOUD: lab: the guest did not reach the command in ${boot_tmo} s; booting it again (console tail below)" >&2
	tail -n 10 "$RUN/console.log" | sed 's/^/#   /' >&2
	mv "$RUN/console.log" "$RUN/console-1.log"
	boot "$left"
fi
t1=$(date +%s.%N)
grep -vE 'terminating on signal|Multiple devices detected' "$RUN/qemu.err" >&2

if [ "$verbose" = 1 ]; then
	awk -v t0="$t0" -v t1="$t1" '/^start /{s=$2} /^end /{e=$2}
		END{printf "lab: wall %.1f s, guest boot to command %.1f s, command %.1f s\n", t1-t0, s, e-s}' \
		"$RUN/times" >&2 2>/dev/null
	echo "lab: guest console (last 20 lines):" >&2
	tail -n 20 "$RUN/console.log" >&2
fi
[ "$broken" = 1 ] && exit 141
if [ -s "$RUN/error" ]; then
	echo "vm.sh: guest setup failed: $(cat "$RUN/error")" >&2
	tail -n 20 "$RUN/console.log" >&2
	exit 125
fi
if [ -s "$RUN/rc" ]; then
	exit "$(cat "$RUN/rc")"
fi
if [ -e "$RUN/stalled" ]; then
	echo "vm.sh: the guest did not reach the command in ${boot_tmo} s; console tail:" >&2
	tail -n 30 "$RUN/console.log" >&2
	exit 125
fi
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "vm.sh: VM timed out after ${tmo}s; $( [ -e "$RUN/times" ] && echo "the command had run since boot" || echo "the guest never reached the command"); console tail:" >&2
	tail -n 20 "$RUN/console.log" >&2
	exit 124
fi
echo "vm.sh: the VM ended without a result (qemu status $qrc); console tail:" >&2
tail -n 30 "$RUN/console.log" >&2
exit 125
