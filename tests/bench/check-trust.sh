#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Does penny check trust a healthy GPU node, and still catch a sick one?
# On a GPU machine: the node's allreduce as allreduce-test measures it
# (twice), then RUNS consecutive runs each of `penny check`, `penny check
# --quick` and `penny check --np N` (N the GPUs) with each run's verdict,
# time and node-row figures, the node row set beside allreduce-test's at
# every size (they must agree within 10 %), then faults the machine allows
# without changing its settings: a process that keeps one GPU's SMs busy
# (PyTorch matmuls on the last GPU) during a check, a GPU hidden with
# CUDA_VISIBLE_DEVICES while the config expects all, an expectation above
# the physical limit.  Prints a summary; every run's JSON lands in OUTDIR.
#   tests/bench/check-trust.sh [OUTDIR]      (default: results/check-trust-DATE-KIND)
# Environment: PENNY (default ./penny), PENNY_PLUGIN_PATH (the plugins),
# RUNS (10), MODES ("full quick np": which checks run RUNS times), KIND
# (the machine's name in the file names, default h200xN), HOG=0 skips the
# busy-GPU fault (it needs python3 with torch).
set -u
export NCCL_NVLS_ENABLE=0
top=$(cd "$(dirname "$0")/../.." && pwd)
P=${PENNY:-$top/penny}
RUNS=${RUNS:-10}
N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$N" -gt 0 ] || { echo "check-trust: no GPU (nvidia-smi -L lists none)" >&2; exit 2; }
KIND=${KIND:-h200x$N}
out=${1:-$top/results/check-trust-$(date -u +%Y-%m-%d)-$KIND}
mkdir -p "$out" || exit 2
if [ -z "${PENNY_NCCL_LIB:-}" ]; then
	d=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)
	[ -n "$d" ] && [ -e "$d/lib/libnccl.so.2" ] && export PENNY_NCCL_LIB=$d/lib/libnccl.so.2
fi
exec > >(tee "$out/summary.txt") 2>&1
echo "# penny check-trust, $(date -u '+%Y-%m-%d %H:%M UTC'), $KIND, $N GPUs, $(nproc) CPUs"
nvidia-smi -L | sed 's/^/# /'
"$P" --version 2>/dev/null | sed 's/^/# /'

# run NAME CMD...: CMD's stdout to NAME.json, its stderr to NAME.err, its
# exit status and seconds to NAME.rc
run() {
	local name=$1 t0 rc
	shift
	t0=$(date +%s.%N)
	"$@" >"$out/$name.json" 2>"$out/$name.err"
	rc=$?
	echo "$rc $(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 2))" \
		"$(date +%s.%N)" "$t0")" >"$out/$name.rc"
}

echo "## allreduce-test --np $N --backend cuda, 8-128 MiB, float sum (twice)"
if [ "$N" -ge 2 ]; then
	for i in 1 2; do
		run ar$i "$P" allreduce-test --np "$N" --backend cuda -b 8M -e 128M -f 4 -d float -o sum --json
	done
fi
echo "## penny bw --gpu (copy engines, then SM copies)"
"$P" bw --gpu 2>&1 | tail -n 20
"$P" bw --gpu --gpu-engine sm 2>&1 | tail -n 20

for mode in ${MODES:-full quick np}; do
	for i in $(seq "$RUNS"); do
		case $mode in
		full) run check-$mode-$i "$P" check --json ;;
		quick) run check-$mode-$i "$P" check --quick --json ;;
		np) run check-$mode-$i "$P" check --np "$N" --json ;;
		esac
	done
done

echo "## faults"
printf 'inventory.gpus = %d\n' "$N" >"$out/all-gpus.conf"
if [ "$N" -ge 2 ]; then
	hide=$(seq -s, 0 $((N - 2)))
	run fault-hidden env CUDA_VISIBLE_DEVICES="$hide" "$P" check --only inventory \
		--config "$out/all-gpus.conf" --json
fi
printf 'allreduce.min-busbw = 5000\ngpu-copy.nvlink-fraction = 1\n' >"$out/over.conf"
run fault-over "$P" check --config "$out/over.conf" --json
if [ "${HOG:-1}" != 0 ] && python3 -c 'import torch' 2>/dev/null; then
	g=$((N - 1))
	python3 - "$g" >"$out/hog.log" 2>&1 <<'PY' &
import sys, time, torch
d = torch.device("cuda", int(sys.argv[1]))
a = torch.randn(8192, 8192, device=d, dtype=torch.bfloat16)
print("hog on", d, flush=True)
t = time.time()
while time.time() - t < 90:
    for _ in range(50):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize(d)
PY
	hog=$!
	sleep 8
	run fault-hog "$P" check --json
	run fault-hog-np "$P" check --np "$N" --json
	kill $hog 2>/dev/null
	wait $hog 2>/dev/null
	cat "$out/hog.log"
fi

python3 - "$out" "$N" "$RUNS" <<'PY'
import json, os, sys, statistics as st
out, n, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def load(name):
    try:
        rc, secs = open(os.path.join(out, name + ".rc")).read().split()
        return int(rc), float(secs), json.load(open(os.path.join(out, name + ".json")))
    except Exception as e:
        return None, None, {"error": str(e)}

ref = {}
for i in (1, 2):
    rc, secs, d = load("ar%d" % i)
    for r in d.get("results", []):
        ref.setdefault(r["size"], []).append(r["oop"]["busbw"])
if ref:
    print("allreduce-test busbw (GB/s):", ", ".join("%d MiB %s" % (s >> 20, "/".join("%.1f" % v for v in ref[s]))
                                                  for s in sorted(ref)))
for mode in ("full", "quick", "np"):
    if not os.path.exists(os.path.join(out, "check-%s-1.rc" % mode)):
        continue
    fails, times, node = [], [], []
    for i in range(1, runs + 1):
        rc, secs, d = load("check-%s-%d" % (mode, i))
        times.append(secs if secs is not None else float("nan"))
        bad = [r for r in d.get("results", []) if r.get("verdict") == "FAIL"]
        if rc != 0 or bad:
            fails.append((i, rc, ["%s %s %s: %s" % (r["check"], r["node"], r["target"], r.get("detail"))
                                  for r in bad]))
        for r in d.get("results", []):
            if r["check"] == "allreduce" and r["target"] == "node" and isinstance(r.get("measured"), (int, float)):
                node.append(r["measured"])
    print("check %-5s %d runs: %d FAIL; seconds min %.1f median %.1f max %.1f; node allreduce GB/s %s" % (
        mode, runs, len(fails), min(times), st.median(times), max(times),
        ("%.1f-%.1f" % (min(node), max(node))) if node else "-"))
    if node and ref:
        big = max(ref)
        r = [v / st.median(ref[big]) for v in node]
        print("    node row / allreduce-test at %d MiB: %.3f-%.3f" % (big >> 20, min(r), max(r)))
    for f in fails:
        print("    run %d exit %s: %s" % f)
for name in ("fault-hidden", "fault-over", "fault-hog", "fault-hog-np"):
    rc, secs, d = load(name)
    if rc is None:
        continue
    print("%s: exit %s in %.1f s" % (name, rc, secs))
    for r in d.get("results", []):
        if r.get("verdict") == "FAIL":
            print("    FAIL %s %s %s: measured %s expected %s (%s) %s" % (
                r["check"], r["node"], r["target"], r.get("measured") or r.get("measured_text"),
                r.get("expected") or r.get("expected_text"), r.get("source"), r.get("detail") or ""))
PY
