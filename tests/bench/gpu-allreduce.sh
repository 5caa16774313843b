#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GPU allreduce: penny's cuda plugin against NCCL, measured side by side in
# one run.  Builds the plugins and the driver (nvcc there), then on 4 and on 2
# GPUs: checks every dtype x op x count (odd ones too) for every algorithm
# and NCCL, measures bfloat16 sum from 1 KiB to 1 GiB with and without CUDA
# graphs, prints the GPU-to-GPU bandwidth matrix, and ends with a ratio
# table against the issue's targets.
#   tests/bench/gpu-allreduce.sh [OUTDIR]     (default: tests/bench/results)
# Environment: B (build dir, default build-gpu), GPUS ("4 2"), MAXB (1G),
# EXTRA=0 skips the flags-only variant; NGPU and BACKENDS (driver's --backend)
# override for a dry run (BACKENDS=fake with PENNY_PLUGIN_PATH's test plugins).  NVLink SHARP/multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/tests/bench/results}
B=${B:-build-gpu}
GPUS=${GPUS:-4 2}
MAXB=${MAXB:-1G}
EXTRA=${EXTRA:-1}
export PENNY_CUDA_TIMEOUT=${PENNY_CUDA_TIMEOUT:-10}
mkdir -p "$out"
stamp=$(date -u +%Y-%m-%d)
ngpu=${NGPU:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
kind=${KIND:-h200x$ngpu}
base="$out/gpu-allreduce-$stamp-$kind"
tsv="$base.tsv"
txt="$base.txt"
: >"$tsv"
exec > >(tee "$txt") 2>&1

echo "# penny GPU allreduce bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname)"
nvidia-smi -L 2>&1 | sed 's/^/# /'
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.mem,power.draw --format=csv,noheader 2>&1 | head -1 | sed 's/^/# driver, sm clock, mem clock, power: /'
nvidia-smi topo -m 2>&1 | sed 's/^/# /'
nvcc --version 2>&1 | tail -1 | sed 's/^/# /'

cd "$top" || exit 2
t0=$(date +%s)
if ! make -j"$(nproc)" B="$B" CFLAGS=-Wno-error "$B/tests/helpers/penny-gpu-driver" plugins >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log"
	echo "# build failed"
	exit 2
fi
echo "# built in $(($(date +%s) - t0)) s"
drv=$top/$B/tests/helpers/penny-gpu-driver
export PENNY_PLUGIN_PATH=${PENNY_PLUGIN_PATH:+$PENNY_PLUGIN_PATH:}$top/$B/plugins
rc=0
run() {
	local t=$1
	shift
	echo "## $*"
	timeout "$t" "$drv" ${BACKENDS:+--backend "$BACKENDS"} "$@"
	local r=$?
	[ $r -ne 0 ] && { echo "## exit $r: $*"; rc=1; }
	return 0
}

for np in $GPUS; do
	[ "$ngpu" -ge "$np" ] || { echo "# skip $np GPUs: only $ngpu"; continue; }
	run 300 --np "$np" --check --label "x$np" --out "$tsv"
	run 400 --np "$np" --perf -b 1K -e "$MAXB" -f 2 --label "x$np" --out "$tsv"
	if [ "$EXTRA" = 1 ]; then
		# a variant that tunes the size table: one-shot and two-shot by flags only
		PENNY_CUDA_ONESHOT_LL_MAX=0 PENNY_CUDA_TWOSHOT_LL_MAX=0 PENNY_CUDA_TWOSHOT_HY_MAX=0 \
			run 200 --np "$np" --backend cuda \
			--algos oneshot,twoshot --perf -b 16K -e 8M -f 2 --label "x$np-flags" --out "$tsv"
	fi
done
[ "$ngpu" -ge 2 ] && run 200 --bw

# Ratio table: penny auto vs NCCL per size, same graph mode.
awk -F'\t' '
$1 == "check" { chk[$2] = chk[$2] sprintf("  %s %s: %s calls, %s wrong\n", $3, $4, $6, $7); bad += $7 }
$1 == "perf" {
	key = $2 SUBSEP $7 SUBSEP $4
	if ($5 == "nccl") nccl[key] = $8 SUBSEP $10
	else if ($6 ~ /^auto/) { x = $6; sub(/^auto:/, "", x); auto[key] = $8 SUBSEP $10 SUBSEP x }
	if ($5 != "nccl" && $6 !~ /^auto/ && (!(key in best) || $8 + 0 < bestus[key])) { bestus[key] = $8 + 0; best[key] = $6 }
	if (!((($2) SUBSEP ($4)) in seen)) { seen[$2, $4] = 1; sizes[$2] = sizes[$2] " " $4 }
	labels[$2] = 1
}
END {
	for (l in chk) printf("# correctness %s\n%s", l, chk[l])
	for (l in labels) {
		if (l ~ /-/) continue
		for (g = 0; g <= 1; g++) {
			printf("\n# %s, bfloat16 sum, %s CUDA graphs: penny (auto) vs NCCL\n", l, g ? "with" : "without")
			printf("%12s %10s %10s %7s %9s %9s %7s %-14s %s\n", "bytes", "penny_us", "nccl_us",
			       "t_ratio", "penny_bw", "nccl_bw", "bw_rat", "auto/best", "target")
			n = split(sizes[l], sz, " ")
			for (i = 1; i <= n; i++) {
				k = l SUBSEP g SUBSEP sz[i]
				if (!(k in nccl) || !(k in auto)) continue
				split(nccl[k], a, SUBSEP); split(auto[k], p, SUBSEP)
				tr = p[1] / a[1]; br = (a[2] > 0) ? p[2] / a[2] : 0
				tgt = ""
				if (sz[i] <= 1048576) tgt = (tr <= 0.6) ? "ok (<=0.6x time)" : "MISSED (<=0.6x time)"
				else if (sz[i] >= 16777216) tgt = (br >= 1.0) ? "ok (>=1x busbw)" : "MISSED (>=1x busbw)"
				printf("%12d %10.2f %10.2f %7.3f %9.1f %9.1f %7.3f %-14s %s\n", sz[i], p[1], a[1], tr,
				       p[2], a[2], br, p[3] "/" best[k], tgt)
			}
		}
	}
	if (bad) printf("\n# WRONG VALUES: %d\n", bad)
}' "$tsv" | tee "$base-summary.txt"
echo "# total $(($(date +%s) - t0)) s, exit $rc"
exit $rc
