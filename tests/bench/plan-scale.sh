#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ring-plan at scale: plan and validate 1024, 2048 and 4096 nodes x 8 GPUs x
# 8 NICs (synthetic), then the 4096-node plan as JSON read back and checked.
# Prints wall time and peak RSS per run (target: under 1 s for 4096 nodes,
# memory linear in the node count).  Not a timed test: it only fails when a
# run fails or the 4096-node plan misses the 1 s target.
#   tests/bench/plan-scale.sh [PENNY]     (default ./penny)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
penny=${1:-${PENNY:-$top/penny}}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/penny-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run NAME CMD...: best wall seconds of 3 runs and peak RSS (KiB, GNU time's %M:
# measured in the child after exec, unlike getrusage from a forking python)
run() {
	local name=$1
	shift
	python3 - "$tmp/rss" "$name" "$@" <<'PY'
import os, subprocess, sys, time
rssf, name, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
gnutime = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
best, rss = None, 0
for i in range(3):
    argv = ([gnutime, "-f", "%M", "-o", rssf] if gnutime else []) + cmd
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        print(f"{name}: exit {p.returncode}", file=sys.stderr)
        sys.exit(1)
    best = wall if best is None else min(best, wall)
    if gnutime:
        rss = max(rss, int(open(rssf).read().split()[-1]))
print(f"{name} {best:.4f} {rss}")
PY
}

out=$tmp/results
: >"$out"
for n in 1 1024 2048 4096; do
	run "plan+validate-$n" "$penny" ring-plan --nodes "$n" --gpus 8 --nics 8 --summary >>"$out" || exit 1
done
"$penny" ring-plan --nodes 4096 --gpus 8 --nics 8 --json >"$tmp/p4096.json" || exit 1
run "json-out-4096" "$penny" ring-plan --nodes 4096 --gpus 8 --nics 8 --json >>"$out" || exit 1
run "check-json-4096" "$penny" ring-plan --check "$tmp/p4096.json" >>"$out" || exit 1

python3 - "$out" "$(stat -c %s "$tmp/p4096.json")" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
r = {n: (float(w), int(k)) for n, w, k in rows}
base = r["plan+validate-1"][1]
print("ring-plan scale, 8 GPUs x 8 NICs per node (wall: best of 3; RSS: peak, KiB; 0 without GNU time)")
print(f"{'run':<22} {'wall s':>8} {'RSS KiB':>9} {'RSS-base':>9} {'KiB/node':>9}")
for name, (w, k) in r.items():
    n = int(name.rsplit("-", 1)[1])
    per = (k - base) / n if n > 1 else 0
    print(f"{name:<22} {w:8.4f} {k:9d} {k - base:9d} {per:9.2f}")
a, b, c = (r[f"plan+validate-{n}"][1] - base for n in (1024, 2048, 4096))
print(f"memory growth 1024->2048: x{b / max(a, 1):.2f}, 2048->4096: x{c / max(b, 1):.2f} (linear: x2)")
print(f"plan JSON for 4096 nodes: {int(sys.argv[2]) / 1e6:.1f} MB")
w = r["plan+validate-4096"][0]
print(f"4096 nodes planned and validated in {w:.3f} s: {'under' if w < 1 else 'OVER'} the 1 s target")
sys.exit(0 if w < 1 else 1)
PY
