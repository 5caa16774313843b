#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GPU allreduce: penny's cuda plugin against NCCL, measured side by side in
# one run.  Builds the plugins and the driver (nvcc there), then on 4 and on 2
# GPUs: checks every dtype x op x count (odd ones too) for every algorithm
# and NCCL (the driver, --check), measures bfloat16 sum from 1 KiB to 1 GiB
# with and without CUDA graphs through penny's own CLI (penny allreduce-test
# --backend cuda,nccl --algo all, then -G 100: its tables and ratio table,
# text, CSV) and through the driver, prints the GPU-to-GPU bandwidth
# matrices (penny bw --gpu, and the driver's), and ends with a ratio table
# against the issue's targets (from the driver's rows).
#   tests/bench/gpu-allreduce.sh [OUTDIR]     (default: results)
# Environment: B (build dir, default build-gpu), GPUS ("4 2"), MAXB (1G),
# EXTRA=0 skips the flags-only variant; NGPU and BACKENDS (driver's --backend)
# override for a dry run (BACKENDS=fake with PENNY_PLUGIN_PATH's test plugins).
# With 2 GPUs or more the cross-node part runs too (PENNY_NODE_ID nodes of
# half the GPUs, and of one GPU with 4): penny's GPU-driven path over tcp and
# shm against NCCL across the same nodes, and the host-staged path.
# DRV=path/to/penny-gpu-driver uses a prebuilt driver (only the plugins are
# built).  PENNY=path/to/penny uses a prebuilt binary (its shared libraries on
# LD_LIBRARY_PATH) instead of building $B/penny, which needs the RDMA, hwloc
# and curses development packages; without either, the penny runs are skipped.
# Only the driver and the plugins are built here: a fresh checkout on a GPU
# machine with a compiler, make and nvcc is enough for them.
# PENNY_BACKENDS (cuda,nccl), ITERS (100) and WARMUP (20): the penny runs'
# --backend, -n and -w; DRIVER_ITERS: the driver's -n (default by size); JSON=1 repeats them with --json; DRIVER_PERF=0 skips
# the driver's timing sweep; HIER_ONLY=1 runs only the cross-node part
# (XMAXB, default 256M, and XITERS, default 20, its largest size and -n;
# XNODES, e.g. "2", the node counts; XTAGS, e.g. "tcp shm-G", the timed runs
# by their file tags; XCHECK=0 skips its every-type-x-op pass).
# PLUGINDIR=dir uses plugins built before (dir holds penny-cuda.so and
# penny-nccl.so) instead of building them.
# NVLink SHARP/multicast stays off.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/results}
B=${B:-build-gpu}
GPUS=${GPUS:-4 2}
MAXB=${MAXB:-1G}
EXTRA=${EXTRA:-1}
export PENNY_CUDA_TIMEOUT=${PENNY_CUDA_TIMEOUT:-10}
mkdir -p "$out"
# The NCCL of the Python environment (the one frameworks load) unless one is named
if [ -z "${PENNY_NCCL_LIB:-}" ]; then
	d=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)
	[ -n "$d" ] && [ -e "$d/lib/libnccl.so.2" ] && export PENNY_NCCL_LIB=$d/lib/libnccl.so.2
fi
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
targets=plugins
[ -n "${PLUGINDIR:-}" ] && targets=
[ -n "${DRV:-}" ] || targets="$targets $B/tests/helpers/penny-gpu-driver"
if [ -n "$targets" ] && ! make -j"$(nproc)" B="$B" CFLAGS=-Wno-error $targets >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log"
	echo "# build failed"
	exit 2
fi
echo "# built in $(($(date +%s) - t0)) s"
if [ -z "${PENNY:-}" ]; then
	if make -j"$(nproc)" B="$B" CFLAGS=-Wno-error "$B/penny" >>"$out/build.log" 2>&1; then
		PENNY=$top/$B/penny
	else
		echo "# penny itself did not build here (see $out/build.log; set PENNY=): penny runs skipped"
	fi
fi
[ -n "${PENNY:-}" ] && echo "# penny: $PENNY ($("$PENNY" --version 2>&1))"
drv=${DRV:-$top/$B/tests/helpers/penny-gpu-driver}
export PENNY_PLUGIN_PATH=${PENNY_PLUGIN_PATH:+$PENNY_PLUGIN_PATH:}${PLUGINDIR:-$top/$B/plugins}
rc=0
run() {
	local t=$1
	shift
	echo "## $*"
	timeout "$t" "$drv" ${BACKENDS:+--backend "$BACKENDS"} "$@" ${DRIVER_ITERS:+-n "$DRIVER_ITERS"}
	local r=$?
	[ $r -ne 0 ] && { echo "## exit $r: $*"; rc=1; }
	return 0
}

# penny allreduce-test --backend cuda,nccl: every algorithm, without and with CUDA graphs
run_penny() {
	local np=$1 tag=$2
	shift 2
	[ -n "${PENNY:-}" ] || return 0
	echo "## penny allreduce-test --np $np --backend ${PENNY_BACKENDS:-cuda,nccl} $*"
	timeout 600 "$PENNY" allreduce-test --np "$np" --backend "${PENNY_BACKENDS:-cuda,nccl}" \
		--algo all -b 1K -e "$MAXB" -f 2 -d bfloat16 -o sum -n "${ITERS:-100}" \
		-w "${WARMUP:-20}" --timeout 120 --csv "$base-penny-$tag.csv" "$@"
	local r=$?
	[ $r -ne 0 ] && { echo "## exit $r: penny allreduce-test $tag"; rc=1; }
	[ "${JSON:-0}" = 1 ] || return 0
	timeout 600 "$PENNY" allreduce-test --np "$np" --backend "${PENNY_BACKENDS:-cuda,nccl}" \
		--algo all -b 1K -e "$MAXB" -f 2 -d bfloat16 -o sum -n "${ITERS:-100}" \
		-w "${WARMUP:-20}" --timeout 120 --json "$@" >"$base-penny-$tag.json" 2>/dev/null ||
		{ echo "## exit $?: penny allreduce-test $tag --json"; rc=1; }
	return 0
}

# Across nodes: the GPUs as emulated nodes (PENNY_NODE_ID; NCCL_HOSTID per
# node for NCCL, which penny sets): 2 nodes of half the GPUs each, and with
# 4 GPUs also 4 nodes of one.  penny's GPU-driven path (a proxy thread per
# rank, the cuda plugin's xnode kernel) over tcp and over shm, the
# host-staged path (PENNY_XNODE=0) for comparison, NCCL across the same
# nodes (NET/Socket on lo): every type x op at odd counts (0 wrong), then
# bfloat16 and float sum timed, with and without CUDA graphs.
xjob() {
	local nodes=$1 per=$2 port=$((20000 + RANDOM % 20000)) r n pids=""
	shift 2
	for ((r = 1; r < nodes * per; r++)); do
		n=$((r / per))
		PENNY_NODE_ID=n$n timeout 600 "$PENNY" allreduce-test --rank $r --nranks $((nodes * per)) \
			--root 127.0.0.1:$port --transport tcp --gpus "$(seq -s, $((n * per)) $((n * per + per - 1)))" \
			--timeout 60 "$@" >/dev/null 2>"$out/xnode-err$r" &
		pids="$pids $!"
	done
	PENNY_NODE_ID=n0 timeout 600 "$PENNY" allreduce-test --rank 0 --nranks $((nodes * per)) \
		--root 127.0.0.1:$port --transport tcp --gpus "$(seq -s, 0 $((per - 1)))" --timeout 60 "$@" \
		2>"$out/xnode-err0"
	r=$?
	for n in $pids; do wait "$n" || r=1; done
	[ $r -eq 0 ] || { cat "$out"/xnode-err*; echo "## exit $r: $nodes x $per: $*"; rc=1; }
	rm -f "$out"/xnode-err*
}
xtimed() {
	local nodes=$1 per=$2 tag=$3
	shift 3
	case " ${XTAGS:-$tag} " in *" $tag "*) ;; *) return 0;; esac
	echo "## $nodes nodes x $per GPUs, $tag: $*"
	xjob "$nodes" "$per" -b 1K -e "${XMAXB:-256M}" -f 4 -n "${XITERS:-20}" -w 5 \
		--csv "$base-xnode-${nodes}x$per-$tag.csv" "$@"
}
run_xnode() {
	local t o per=$((ngpu / 2)) nodes
	[ -n "${PENNY:-}" ] && [ "$ngpu" -ge 2 ] || return 0
	export NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
	for tp in $([ "${XCHECK:-1}" = 1 ] && echo tcp shm); do
		echo "## cuda across 2 nodes x $per GPUs, GPU-driven over $tp: every type x op, odd counts"
		for t in int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double; do
			for o in sum prod min max avg; do
				PENNY_XNODE_TRANSPORT=$tp xjob 2 "$per" --backend cuda -d $t -o $o -b 1 -e 4M -f 5 \
					-n 1 -w 0 | grep -E "Out of bounds|differ" | tr '\n' ' ' | sed "s/^/## $tp $t $o: /;s/\$/\n/"
			done
		done
	done
	for nodes in ${XNODES:-2 $([ "$ngpu" -ge 4 ] && echo 4)}; do
		per=$((ngpu / nodes))
		PENNY_XNODE_TRANSPORT=tcp xtimed $nodes $per tcp --backend cuda,nccl -d bfloat16 -o sum
		PENNY_XNODE_TRANSPORT=tcp xtimed $nodes $per tcp-G --backend cuda,nccl -d bfloat16 -o sum -G 10
		PENNY_XNODE_TRANSPORT=tcp xtimed $nodes $per tcp-float --backend cuda,nccl -d float -o sum
		PENNY_XNODE_TRANSPORT=tcp xtimed $nodes $per tcp-float-G --backend cuda,nccl -d float -o sum -G 10
		PENNY_XNODE_TRANSPORT=shm xtimed $nodes $per shm --backend cuda,nccl -d bfloat16 -o sum
		PENNY_XNODE_TRANSPORT=shm xtimed $nodes $per shm-G --backend cuda,nccl -d bfloat16 -o sum -G 10
		# NCCL's socket transport with as many sockets and threads as penny's proxy
		NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=1 PENNY_XNODE_TRANSPORT=tcp \
			xtimed $nodes $per tcp-nccl4 --backend cuda,nccl -d bfloat16 -o sum
		PENNY_XNODE=0 xtimed $nodes $per staged --backend cuda -d bfloat16 -o sum
	done
}

[ "${HIER_ONLY:-0}" = 1 ] && GPUS=
for np in $GPUS; do
	[ "$ngpu" -ge "$np" ] || { echo "# skip $np GPUs: only $ngpu"; continue; }
	run 300 --np "$np" --check --label "x$np" --out "$tsv"
	run_penny "$np" "x$np"
	run_penny "$np" "x$np-G100" -G 100
	[ "${DRIVER_PERF:-1}" = 1 ] && run 400 --np "$np" --perf -b 1K -e "$MAXB" -f 2 --label "x$np" --out "$tsv"
	if [ "${DRIVER_PERF:-1}" = 1 ]; then
		# what a real caller does: sizes largest first and in random order (a stale
		# flag of a bigger call must not pass), every result checked after its calls
		run 300 --np "$np" --algos auto,symm --perf -b 1K -e 64M -f 2 --order down \
			--label "x$np-down" --out "$tsv"
		run 300 --np "$np" --algos auto,symm --perf -b 1K -e 64M -f 2 --order random \
			--label "x$np-random" --out "$tsv"
		# programmatic dependent launch off: what it is worth
		PENNY_CUDA_PDL=0 run 200 --np "$np" --backend cuda --algos auto --perf -b 1K -e 16M -f 4 \
			--label "x$np-nopdl" --out "$tsv"
	fi
	if [ "$EXTRA" = 1 ]; then
		# a variant that tunes the size table: one-shot and two-shot by flags only
		PENNY_CUDA_ONESHOT_LL_MAX=0 PENNY_CUDA_TWOSHOT_LL_MAX=0 PENNY_CUDA_TWOSHOT_HY_MAX=0 \
			run 200 --np "$np" --backend cuda \
			--algos oneshot,twoshot --perf -b 16K -e 8M -f 2 --label "x$np-flags" --out "$tsv"
	fi
done
run_xnode
[ "${HIER_ONLY:-0}" = 1 ] && { echo "# total $(($(date +%s) - t0)) s, exit $rc"; exit $rc; }
[ "$ngpu" -ge 2 ] && run 200 --bw
[ "$ngpu" -ge 1 ] && run 60 --dmabuf
if [ "$ngpu" -ge 2 ] && [ -n "${PENNY:-}" ]; then
	echo "## penny bw --gpu --gpu-engine both"
	timeout 300 "$PENNY" bw --gpu --gpu-engine both || { echo "## exit $?: penny bw --gpu"; rc=1; }
fi

# Ratio table: penny auto vs the faster of NCCL default and NCCL symmetric
# at each size, same graph mode, against the single-node issue's targets.
awk -F'\t' '
$1 == "check" {
	chk[$2] = chk[$2] sprintf("  %s %s: %s calls, %s wrong\n", $3, $4, $6, $7)
	if ($3 == "nccl") nbad += $7; else bad += $7
}
$1 == "perf" {
	key = $2 SUBSEP $7 SUBSEP $4
	if ($5 == "nccl") {
		if (!(key in nccl) || $8 + 0 < ncclus[key]) { ncclus[key] = $8 + 0; nccl[key] = $8 SUBSEP $10 SUBSEP $6 }
		if ($6 ~ /^auto/) dflt[key] = $8; else if ($6 == "symm") symm[key] = $8
	} else if ($6 ~ /^auto/) { x = $6; sub(/^auto:/, "", x); auto[key] = $8 SUBSEP $10 SUBSEP x SUBSEP $11 }
	if ($5 != "nccl" && $6 !~ /^auto/ && (!(key in best) || $8 + 0 < bestus[key])) { bestus[key] = $8 + 0; best[key] = $6 }
	if (!((($2) SUBSEP ($4)) in seen)) { seen[$2, $4] = 1; sizes[$2] = sizes[$2] " " $4 }
	labels[$2] = 1
}
END {
	for (l in chk) printf("# correctness %s\n%s", l, chk[l])
	for (l in labels) {
		if (l ~ /-/) continue
		for (g = 0; g <= 1; g++) {
			printf("\n# %s, bfloat16 sum, %s CUDA graphs: penny (auto) vs the faster NCCL (default, symmetric)\n",
			       l, g ? "with" : "without")
			printf("%12s %9s %9s %9s %-4s %7s %9s %9s %7s %-16s %s\n", "bytes", "penny_us", "nccl_def",
			       "nccl_sym", "best", "t_ratio", "penny_bw", "nccl_bw", "bw_rat", "auto/best", "target")
			n = split(sizes[l], sz, " ")
			for (i = 1; i <= n; i++) {
				k = l SUBSEP g SUBSEP sz[i]
				if (!(k in nccl) || !(k in auto)) continue
				split(nccl[k], a, SUBSEP); split(auto[k], p, SUBSEP)
				tr = p[1] / a[1]; br = (a[2] > 0) ? p[2] / a[2] : 0
				tgt = ""
				if (sz[i] <= 16777216) tgt = (tr <= 0.7) ? "ok (<=0.7x time)" : "MISSED (<=0.7x time)"
				else if (sz[i] >= 33554432) tgt = (br >= 1.05) ? "ok (>=1.05x busbw)" : "MISSED (>=1.05x busbw)"
				if (sz[i] == 1024 && g) tgt = tgt ((p[1] < 3.0) ? ", ok (<3 us)" : ", MISSED (<3 us)")
				printf("%12d %9.2f %9s %9s %-4s %7.3f %9.1f %9.1f %7.3f %-16s %s\n", sz[i], p[1],
				       (k in dflt) ? sprintf("%.2f", dflt[k]) : "-", (k in symm) ? sprintf("%.2f", symm[k]) : "-",
				       a[3] == "symm" ? "sym" : "def", tr, p[2], a[2], br, p[3] "/" best[k], tgt)
			}
		}
	}
	if (bad) printf("\n# WRONG VALUES: %d\n", bad)
	if (nbad) printf("\n# NCCL WRONG VALUES: %d (results of NCCL itself, the baseline: see the check lines)\n", nbad)
}' "$tsv" | tee "$base-summary.txt"
# Programmatic dependent launch: penny auto with it (the main sweep) and without.
{
printf "\n# penny auto with and without programmatic dependent launch (PENNY_CUDA_PDL=0)\n"
printf "%-6s %5s %12s %10s %10s %7s\n" gpus graph bytes pdl_us nopdl_us ratio
awk -F'\t' '
$1 == "perf" && $5 == "cuda" && $6 ~ /^auto/ {
	l = $2; on = (l !~ /-nopdl$/); sub(/-nopdl$/, "", l)
	if (l ~ /-/) next
	k = l SUBSEP $7 SUBSEP $4; if (on) pon[k] = $8; else { poff[k] = $8; ks[k] = 1 }
}
END {
	for (k in ks) if (k in pon) { split(k, a, SUBSEP); printf("%-6s %5s %12d %10.2f %10.2f %7.3f\n", a[1], a[2] ? "G" : "-", a[3], pon[k], poff[k], pon[k] / poff[k]) }
}' "$tsv" | sort -k1,1 -k2,2 -k3,3n
} | tee -a "$base-summary.txt"
echo "# total $(($(date +%s) - t0)) s, exit $rc"
exit $rc
