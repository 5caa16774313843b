#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The nvshmem plugin on one GPU machine: builds penny-gpu-driver, the cuda
# and nccl plugins and penny-nvshmem.so (NVSHMEM from the Python
# environment's nvidia.nvshmem unless NVSHMEM_HOME names one), then on 4 and
# 2 GPUs: every dtype x op x odd count x algorithm (auto, oneshot, twoshot,
# ring, simple ring), in and out
# of place, registered (symmetric) and staged buffers, 0 wrong expected;
# then bfloat16 sum 1 KiB..MAXB for nvshmem, cuda and nccl with and without
# CUDA graphs (the driver), the same through penny allreduce-test --backend
# nvshmem,cuda,nccl for bfloat16 and float when penny builds here, and the
# ratio table NVSHMEM vs cuda (time up to 1 MiB, busbw from 16 MiB) against
# the issue's targets (<= 1.2x the time, >= 0.95x the busbw).
#   tests/bench/nvshmem-allreduce.sh OUTDIR
# QUICK=1: build, then a small correctness pass on every GPU (and 2), no timing.
# Environment: B (build dir, build-nvshmem), GPUS ("4 2"), MAXB (1G),
# ITERS (50), NVSHMEM_HOME, PENNY (a prebuilt penny; else built, else skipped),
# DTYPES (the types of the penny runs: "bfloat16 float").
# Every step runs under timeout; NVLink multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: $0 OUTDIR}
B=${B:-build-nvshmem}
GPUS=${GPUS:-4 2}
MAXB=${MAXB:-1G}
QUICK=${QUICK:-0}
export PENNY_CUDA_TIMEOUT=${PENNY_CUDA_TIMEOUT:-10} PENNY_NVSHMEM_TIMEOUT=${PENNY_NVSHMEM_TIMEOUT:-10}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py() { python3 -c "import $1 as m; print(m.__path__[0])" 2>/dev/null; }
[ -n "${NVSHMEM_HOME:-}" ] || NVSHMEM_HOME=$(py nvidia.nvshmem)
export NVSHMEM_HOME
if [ -z "${PENNY_NCCL_LIB:-}" ]; then
	d=$(py nvidia.nccl)
	[ -n "$d" ] && [ -e "$d/lib/libnccl.so.2" ] && export PENNY_NCCL_LIB=$d/lib/libnccl.so.2
fi
# NVSHMEM's host library, its bootstrap and transports, and the CUDA runtime it needs
for m in nvidia.cuda_runtime nvidia.nvshmem; do
	d=$(py $m)
	[ -n "$d" ] && [ -d "$d/lib" ] && LD_LIBRARY_PATH=$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
done
[ -n "$NVSHMEM_HOME" ] && LD_LIBRARY_PATH=$NVSHMEM_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
stamp=$(date -u +%Y-%m-%d)
ngpu=${NGPU:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
base="$out/nvshmem-allreduce-$stamp-x$ngpu"
tsv="$base.tsv"
: >"$tsv"
exec > >(tee "$base.txt") 2>&1
echo "# penny nvshmem allreduce bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), QUICK=$QUICK"
nvidia-smi -L 2>&1 | sed 's/^/# /'
echo "# NVSHMEM_HOME=$NVSHMEM_HOME"
grep -h 'define NVSHMEM_VENDOR_\(MAJOR\|MINOR\|PATCH\)_VERSION' \
	"$NVSHMEM_HOME"/include/non_abi/nvshmem_version.h 2>/dev/null | sed 's/^/# /'

cd "$top" || exit 2
t0=$(date +%s)
if ! timeout 900 make -j"$(nproc)" B="$B" CFLAGS=-Wno-error NVSHMEM_HOME="$NVSHMEM_HOME" plugins \
	"$B/tests/helpers/penny-gpu-driver" >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log"
	echo "# build failed"
	exit 2
fi
grep -i 'skipped' "$out/build.log"
[ -e "$B/plugins/penny-nvshmem.so" ] || { echo "# penny-nvshmem.so was not built"; exit 2; }
echo "# built in $(($(date +%s) - t0)) s"
if [ -z "${PENNY:-}" ] && [ "$QUICK" != 1 ]; then
	if timeout 300 make -j"$(nproc)" B="$B" CFLAGS=-Wno-error NVSHMEM_HOME="$NVSHMEM_HOME" "$B/penny" \
		>>"$out/build.log" 2>&1; then
		PENNY=$top/$B/penny
	else
		echo "# penny itself did not build here (see build.log; set PENNY=): penny runs skipped"
	fi
fi
drv=$top/$B/tests/helpers/penny-gpu-driver
export PENNY_PLUGIN_PATH=$top/$B/plugins
rc=0
run() {
	local t=$1
	shift
	echo "## $*"
	timeout -k 10 "$t" "$drv" "$@"
	local r=$?
	[ $r -ne 0 ] && { echo "## exit $r: $*"; rc=1; }
	return 0
}

for np in $GPUS; do
	[ "$ngpu" -ge "$np" ] || { echo "# skip $np GPUs: only $ngpu"; continue; }
	q=
	[ "$QUICK" = 1 ] && q=--quick
	run 200 --np "$np" --backend nvshmem --algos auto,oneshot,twoshot,ring,simple --check $q \
		--label "x$np" --out "$tsv" --timeout 60
	[ "$QUICK" = 1 ] && continue
	run 200 --np "$np" --backend nvshmem,cuda,nccl --algos auto --perf -b 1K -e "$MAXB" -f 4 \
		-n "${ITERS:-50}" -w 5 --label "x$np" --out "$tsv" --timeout 120
	run 90 --np "$np" --backend nvshmem --algos oneshot,twoshot,ring,simple --perf -b 1K -e 64M \
		-f 8 -n 20 -w 3 --label "x$np-algos" --out "$tsv" --timeout 60
	[ -n "${PENNY:-}" ] || continue
	for d in ${DTYPES:-bfloat16 float}; do
		for g in 0 10; do
			echo "## penny allreduce-test --np $np --backend nvshmem,cuda,nccl -d $d -G $g"
			timeout -k 10 120 "$PENNY" allreduce-test --np "$np" --backend nvshmem,cuda,nccl \
				-b 1K -e "$MAXB" -f 8 -d $d -o sum -n 20 -w 3 -G $g --timeout 60 \
				--csv "$base-penny-x$np-$d-G$g.csv" || { echo "## exit $?: penny $d G$g"; rc=1; }
		done
	done
done

# Ratio table from the driver's rows: nvshmem auto vs cuda auto, same graph mode.
awk -F'\t' '
$1 == "check" { calls += $6; bad += $7; if ($7 > 0) print "# WRONG: " $0 }
$1 == "perf" && $6 ~ /^auto/ && $2 !~ /-/ {
	k = $2 SUBSEP $7 SUBSEP $4
	us[k, $5] = $8; bw[k, $5] = $10; keys[k] = 1
}
END {
	printf "# correctness: %d checks, %d wrong\n", calls, bad
	printf "%-6s %-3s %12s %11s %11s %7s %10s %10s %7s %s\n", "label", "G", "bytes", "nvshmem us",
		"cuda us", "t ratio", "nvshmem bw", "cuda bw", "bw ratio", "target"
	# rows sorted by label, graph mode and size (mawk has no asorti)
	fflush()
	cmd = "sort -k1,1 -k2,2 -k3,3n"
	for (kk in keys) {
		i = 1
		ks[i] = kk
		split(ks[i], f, SUBSEP)
		if (!((ks[i], "nvshmem") in us) || !((ks[i], "cuda") in us)) continue
		b = f[3] + 0
		tr = us[ks[i], "nvshmem"] / us[ks[i], "cuda"]
		br = bw[ks[i], "cuda"] > 0 ? bw[ks[i], "nvshmem"] / bw[ks[i], "cuda"] : 0
		tgt = b <= 1048576 ? (tr <= 1.2 ? "ok (time <= 1.2x)" : "MISS (time > 1.2x)") : \
		      b >= 16777216 ? (br >= 0.95 ? "ok (busbw >= 0.95x)" : "MISS (busbw < 0.95x)") : "-"
		printf "%-6s %-3s %12d %11.2f %11.2f %7.2f %10.1f %10.1f %7.2f %s\n", f[1], f[2], b,
			us[ks[i], "nvshmem"], us[ks[i], "cuda"], tr, bw[ks[i], "nvshmem"], bw[ks[i], "cuda"], br, tgt | cmd
	}
	close(cmd)
	exit bad > 0
}' "$tsv" | tee "$base-ratio.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
echo "# total $(($(date +%s) - t0)) s, exit $rc"
exit $rc
