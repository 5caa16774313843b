#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's settings parsers on malformed input (issue 42, items 3, 4,
# 12): PCI config space cut short, all ones (a dead switch port), a
# capability list that loops or points below 0x100 SKIP naming the file and
# why, never PASS; /proc/mounts over the old 1 MiB read mark is read whole
# (a /dev/shm line across the mark judged right, one past it found) and
# one over the cap SKIPs saying so; tmpfs size=0 is unlimited, and a
# MemTotal that overflows or is no number SKIPs.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/mksysfs.sh"
unset PENNY_SYSROOT PENNY_NVML_LIB PENNY_DEBUG

# A switch (root port 00:01.0, upstream 01:00.0) with a GPU and a NIC on
# downstream ports 02:00.0 and 02:01.0, read as root.
sys_root ok n1 >/dev/null
sys_cpus 4 1
PCI_NUMA=0 sys_switch 0x00 >/dev/null
sys_ib mlx5_0 0000:04:00.0
sys_port mlx5_0 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand
for b in 0000:00:01.0 0000:01:00.0 0000:02:00.0 0000:02:01.0; do sys_extcfg $b 0x0001; done
printf '%s\n' 'sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0' \
	'tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=8388608k,inode64 0 0' >ok/proc/mounts
echo 'MemTotal:       16384000 kB' >ok/proc/meminfo
copy() { rm -rf "$2" && cp -a "$1" "$2"; }
cfgof() { echo "$(readlink -f "$1/sys/bus/pci/devices/$2")/config"; }

# a settings result: verdict TARGET FILE -> "VERDICT MEASURED | DETAIL"
verdict() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[2]))
r = [x for x in d["results"] if x["check"] == "settings" and x["target"] == sys.argv[1]]
assert len(r) == 1, r
print(r[0]["verdict"], r[0]["measured_text"] if r[0]["measured"] is None else r[0]["measured"], "|", r[0]["detail"] or "")' "$@"
}
acs_of() { # TREE -> GPU0:acs verdict line
	penny check --sysfs-root "$1" --only settings --json >out.json
	verdict GPU0:acs out.json
}

test_expect_success 'the tree as made: GPU0:acs PASS (the control for what follows)' '
	acs_of ok | grep -q "^PASS off"
'

# the switch port above the GPU (02:00.0) made malformed in turn
bad_cfg() { # NAME PYTHON (b: the 4096 bytes; w32(off, v))
	copy ok "$1" && f=$(cfgof "$1" 0000:02:00.0) &&
	python3 -c "import struct,sys
b = bytearray(open(sys.argv[1], \"rb\").read())
def w32(o, v): struct.pack_into(\"<I\", b, o, v)
$2
open(sys.argv[1], \"wb\").write(b)" "$f"
}
for c in "cut0x120@b = b[:0x120]@288 bytes, not 4096: cut short" \
	"cut0x14a@b = b[:0x14a]@330 bytes, not 4096: cut short" \
	"ones@b = bytearray(b\"\\xff\" * 4096)@reads all ones (vendor 0xffff): the function does not answer" \
	"zeros@b = bytearray(4096)@is no config space to trust: vendor 0x0000: not a function" \
	"loop@w32(0x100, 0x0001 | 1 << 16 | 0x100 << 20)@the capability list loops (0x100 points back to 0x100)" \
	"loop2@w32(0x100, 0x0001 | 1 << 16 | 0x140 << 20); w32(0x140, 0x0002 | 1 << 16 | 0x100 << 20)@loops (0x140 points back to 0x100)" \
	"below@w32(0x100, 0x0001 | 1 << 16 | 0x40 << 20)@the capability at 0x100 points to 0x040, outside the extended space" \
	"extones@w32(0x100, 0x0001 | 1 << 16 | 0x200 << 20); w32(0x200, 0xffffffff)@the capability header at 0x200 reads all ones" \
	"empty@w32(0x100, 0x0001 | 1 << 16 | 0x200 << 20)@0x100 points to an empty capability header at 0x200" \
	"long@b = b + b\"\\0\"@longer than 4096 bytes: no config space"; do
	name=${c%%@*} rest=${c#*@} py=${rest%%@*} why=${rest#*@}
	test_expect_success "config space $name: SKIP naming the file and why, never PASS" '
		bad_cfg $name "$py" && acs_of $name >v &&
		grep -q "^SKIP None | /sys/bus/pci/devices/0000:02:00.0/config " v &&
		grep -qF "$why" v || { cat v; false; }
	'
done

test_expect_success 'ACS with redirect past a bad port still fails (the bad one does not hide it)' '
	bad_cfg redir "b = b[:0x120]" && sys_extcfg_at() { SYS_R=$1; sys_extcfg $2 $3; } &&
	sys_extcfg_at redir 0000:00:01.0 0x001d && sys_extcfg_at redir 0000:02:01.0 0x001d &&
	test_exit 1 penny check --sysfs-root redir --only settings --json >out.json &&
	verdict mlx5_0:acs out.json | grep -q "^FAIL RR,CR,UF at 0000:02:01.0" &&
	verdict GPU0:acs out.json | grep -q "^SKIP"
'

# /proc/mounts: filler lines of 100 bytes before the /dev/shm line
mounts() { # TREE LINES_BEFORE SHM_LINE
	python3 -c "import sys
f = open(sys.argv[1], \"w\")
for i in range(int(sys.argv[2])):
    f.write(\"overlay /var/lib/docker/overlay2/%064d/merged overlay rw 0 0\n\" % i)
f.write(sys.argv[3] + \"\n\")
f.write(\"proc /proc proc rw 0 0\n\")" "$1/proc/mounts" "$2" "$3"
}
shm16g='tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=16777216k,inode64 0 0'

test_expect_success '/proc/mounts: the /dev/shm line across the 1 MiB mark is read whole' '
	copy ok m1 && mounts m1 10485 "$shm16g" &&
	test $(stat -c %s m1/proc/mounts) -gt 1048700 &&
	acs_of m1 >/dev/null && verdict dev-shm out.json | grep -q "^PASS 16 GiB |"
'
test_expect_success '/proc/mounts: a /dev/shm line past 1 MiB is found (4 MiB of mounts)' '
	copy ok m4 && mounts m4 42000 "$shm16g" &&
	acs_of m4 >/dev/null && verdict dev-shm out.json | grep -q "^PASS 16 GiB |"
'
test_expect_success '/proc/mounts over 16 MiB: SKIP saying it is too large, not judged' '
	copy ok m17 && mounts m17 170000 "$shm16g" &&
	acs_of m17 >/dev/null && verdict dev-shm out.json >v &&
	grep -q "^SKIP None | /proc/mounts is larger than 16 MiB: too large to read whole" v
'

test_expect_success 'tmpfs size=0 (no limit) is unlimited, not half of MemTotal' '
	copy ok z && echo "tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=0k 0 0" >z/proc/mounts &&
	acs_of z >/dev/null && verdict dev-shm out.json | grep -q "^PASS unlimited |"
'
test_expect_success 'tmpfs without size=: half of MemTotal (the rule kept)' '
	copy ok h && echo "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0" >h/proc/mounts &&
	echo "MemTotal:       16777216 kB" >h/proc/meminfo &&
	acs_of h >/dev/null && verdict dev-shm out.json | grep -q "^PASS 8 GiB |"
'
for m in "18446744073709551615 kB|out of range" "18014398509481984 kB|out of range" \
	"99999999999999999999999 kB|out of range" "-5 kB|that is not a size" "12 MB|that is not a size" \
	"0 kB|out of range" "0x100 kB|that is not a size" "|that is not a size"; do
	test_expect_success "MemTotal '${m%|*}' (tmpfs without size=): SKIP, never a wrapped size" '
		copy ok mt && echo "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0" >mt/proc/mounts &&
		echo "MemTotal:       ${m%|*}" >mt/proc/meminfo &&
		acs_of mt >/dev/null && verdict dev-shm out.json >v &&
		grep -q "^SKIP None | /dev/shm has no size=, and /proc/meminfo gives a MemTotal ${m#*|}" v ||
		{ cat v; false; }
	'
done
test_done
