#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# capture-rxe.sh - capture the sysfs tree of the lab's rxe devices into a
# tarball that penny replays with --sysfs-root (topo, top, the nic layer).
#
# usage: tests/lab/capture-rxe.sh [OUT.tar.gz]
#        (default tests/fixtures/sysfs-rxe-lab.tar.gz)
# Boots the lab with one veth pair (rxe0 on veth0, rxe1 on veth1), runs a
# little traffic so the counters are not zero, and copies:
#   /sys/class/infiniband/*, /sys/devices/virtual/infiniband/rxeN/**
#   /sys/class/net/<parent>, /sys/devices/virtual/net/<parent>/** (attributes,
#       statistics/)
#   /sys/class/infiniband_verbs, /sys/class/infiniband_mad and their devices
# Only readable text files are kept (an attribute the kernel refuses to read,
# such as the type of an empty GID slot, is left out); power/ and queues/
# are skipped; symlinks stay relative symlinks when their target is captured.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

if [ "${1:-}" = --guest ]; then
	# in the guest: $2 = the tarball to write (sysfs copied to tmpfs first:
	# thousands of small files over 9p are slow)
	dest=/tmp/capture
	mkdir -p "$dest"
	ib_write_bw -d rxe1 -x 1 -s 65536 -n 200 >/dev/null 2>&1 &
	for i in $(seq 100); do
		[ -n "$(ss -Hltn 'sport = :18515')" ] && break
		sleep 0.1
	done
	ib_write_bw -d rxe0 -x 1 -s 65536 -n 200 10.0.0.2 >/dev/null
	wait
	python3 - "$dest" <<'PY'
import os, sys
dest = sys.argv[1]
roots = []
for cls in ("infiniband", "infiniband_verbs", "infiniband_mad"):
    d = "/sys/class/" + cls
    for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        p = os.path.join(d, n)
        if not os.path.islink(p):
            continue
        roots.append(p)
        if cls == "infiniband":
            parent = open(os.path.join(p, "parent")).read().strip()
            roots.append("/sys/class/net/" + parent)
real_roots = [os.path.realpath(r) for r in roots]
classes = sorted({os.path.dirname(r) for r in roots})
keep = real_roots + classes
SKIP = {"power", "queues"}

def inside(p):
    return any(p == k or p.startswith(k + "/") for k in keep)

def put_link(path):
    target = os.readlink(path)
    resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
    if target.startswith("/") or not inside(os.path.realpath(resolved)):
        return
    out = dest + path
    os.makedirs(os.path.dirname(out), exist_ok=True)
    os.symlink(target, out)

def put_file(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return
    if b"\0" in data:
        return
    try:
        data.decode("ascii")
    except UnicodeDecodeError:
        return
    out = dest + path
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:
        f.write(data)

for d in classes:
    os.makedirs(dest + d, exist_ok=True)
    for n in os.listdir(d):
        p = os.path.join(d, n)
        if not os.path.islink(p) and os.path.isfile(p):
            put_file(p)
for r in roots:
    put_link(r)
for r in real_roots:
    for cur, dirs, files in os.walk(r):
        dirs[:] = [x for x in dirs if x not in SKIP and not os.path.islink(os.path.join(cur, x))]
        os.makedirs(dest + cur, exist_ok=True)
        for n in sorted(files) + sorted(os.listdir(cur)):
            p = os.path.join(cur, n)
            if os.path.lexists(dest + p):
                continue
            if os.path.islink(p):
                put_link(p)
            elif os.path.isfile(p) and os.access(p, os.R_OK):
                put_file(p)
PY
	tar -C "$dest" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - sys |
		gzip -n -9 >"$2"
	exit 0
fi

out=${1:-$top/tests/fixtures/sysfs-rxe-lab.tar.gz}
case $out in /*) ;; *) out=$PWD/$out ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/penny-capture.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bash "$here/vm.sh" --pairs 1 --timeout 300 --share "$tmp" -- \
	"bash $(printf %q "$here/capture-rxe.sh") --guest $(printf %q "$tmp/sys.tar.gz")"
mkdir -p "$(dirname "$out")"
mv "$tmp/sys.tar.gz" "$out"
echo "$out: $(tar -tzf "$out" | wc -l) entries, $(stat -c %s "$out") bytes"
