#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny's collectives inside PyTorch: torch.distributed.all_reduce,
# reduce_scatter_tensor and all_gather_into_tensor (torchrun, one process
# per GPU) with NCCL alone and with the NCCL interposer
# (LD_PRELOAD=libpenny-nccl.so), on 2 and on 4 GPUs.  Every dtype PyTorch
# offers x sum, min, max, avg, product (the all-gather: no op) at odd and
# even counts: results compared bit for bit with NCCL's (every rank's, and
# both against a float64 reference); bfloat16 from 1 KiB to 256 MiB (the
# whole buffer), eager and captured in CUDA graphs (whose replay is
# checked): NCCL and penny side by side, the penny/NCCL ratio per size.
# Writes OUTDIR/torch-COLL-DATE-KIND-xN.{txt,tsv} (COLL: allreduce,
# reducescatter, allgather) and the runs' JSON.
#   tests/bench/torch-allreduce.sh [OUTDIR]     (default: results)
# Environment: COLLS (of all_reduce reduce_scatter all_gather, default all
# three), B (build dir, default build-gpu), GPUS ("2 4"), PYTHON (python3),
# MAXB (bytes, 1024..16G, default 268435456), ITERS (200), BLOCKS (timed
# blocks per size, 5..100, default 5: the time is their median), GRAPH
# (calls per captured graph, 0..9999, default 20; 0: no graphs), TIMEOUT
# (seconds per torchrun launch, 1800), KIND (the machine's name in the file
# names), PENNY_NCCL_REAL (the real NCCL; default: the Python environment's
# nvidia/nccl/lib/libnccl.so.2, else the one PyTorch links),
# TORCH_NCCL_USE_COMM_NONBLOCKING (PyTorch's choice by default: with eager
# init it makes non-blocking communicators).  ALL=1 adds a run with
# PENNY_NCCL_MAX_BYTES=1T (every size on penny, the larger ones on buffers
# the interposer's registration cache shares once: the timing loops reuse
# their tensor, as PyTorch's callers do), written as ...-xN-all.{txt,tsv};
# ALL=2 also one with the cache off (PENNY_NCCL_REGCACHE=0: the staging
# copy), as ...-xN-all-stage.{txt,tsv}.
# ROUNDS (1..50, default 1): launch NCCL and penny ROUNDS times each,
# alternately, NCCL first in odd rounds and last in even ones (N P, P N,
# N P, ...: eager times move by up to 2x from one launch to the next, so one
# pair cannot judge a few per cent); every launch's JSON kept
# (...-nccl-rR.json, ...-penny-rR.json), each round compared as one run is
# (...-xN-rR.{txt,tsv}), then per size the median over the rounds of each
# side, their spread and the ratios round by round (...-xN-rounds.{txt,tsv};
# a ratio over the goal is reported, not an error).  PIN=1 (default 0):
# each rank binds itself to its own CPUs before CUDA starts (the CPUs it may
# use shared out evenly, its GPU's NUMA node's where the machine says), one
# "# pin:" line a rank.
# AB=R (2..200; default 0: off): instead of the above, one launch per GPU
# count and collective under the interposer that runs NCCL and penny in the
# same processes (torch_allreduce.py ab: the default group penny's, a second
# one made with PENNY_NCCL=off NCCL's), R rounds of one timed block each,
# alternated; writes ...-xN-ab.{txt,tsv,json}.  Whatever moves one launch's
# eager times against the next moves both sides alike there.  AB_SWAP=1:
# penny on the second group and NCCL on the default one (...-ab-swap).
# AB_CONTROL=1: NCCL on both groups, the "penny" side too (...-ab-control):
# the ratio the A/B reads without penny, against which its 3 % is judged.
# ROUNDS, ALL and BLOCKS do not apply to AB runs (an error there).
# Builds only libpenny-nccl.so and the cuda plugin (make, a C compiler and
# nvcc are enough), or none with PLUGINDIR=dir (both built before).  NVLink
# SHARP/multicast stays off.
# Exit: 0 all identical, every graph replay right and penny ran each
# collective, 1 otherwise, 2 when it could not run.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/results}
B=${B:-build-gpu}
PY=${PYTHON:-python3}
GPUS=${GPUS:-2 4}
COLLS=${COLLS:-all_reduce reduce_scatter all_gather}
TIMEOUT=${TIMEOUT:-1800}
ROUNDS=${ROUNDS:-1}
PIN=${PIN:-0}
AB=${AB:-0}
die() {
	echo "torch-allreduce: $*" >&2
	exit 2
}

for coll in $COLLS; do
	case $coll in
	all_reduce | reduce_scatter | all_gather) ;;
	*) die "COLLS: '$coll' is not all_reduce, reduce_scatter or all_gather" ;;
	esac
done
[[ $ROUNDS =~ ^[1-9][0-9]?$ && $ROUNDS -le 50 ]] || die "ROUNDS: '$ROUNDS' is not 1..50"
[[ $AB = 0 || ($AB =~ ^[1-9][0-9]{0,2}$ && $AB -ge 2 && $AB -le 200) ]] || die "AB: '$AB' is not 0 or 2..200"
case ${AB_SWAP:-0} in 0 | 1) ;; *) die "AB_SWAP: '${AB_SWAP}' is not 0 or 1" ;; esac
[ "${AB_SWAP:-0}" = 0 ] || [ "$AB" != 0 ] || die "AB_SWAP: applies to AB=R runs only (AB is 0)"
case ${AB_CONTROL:-0} in 0 | 1) ;; *) die "AB_CONTROL: '${AB_CONTROL}' is not 0 or 1" ;; esac
[ "${AB_CONTROL:-0}" = 0 ] || [ "$AB" != 0 ] || die "AB_CONTROL: applies to AB=R runs only (AB is 0)"
[ "$AB" = 0 ] || [[ $ROUNDS = 1 && ${ALL:-0} = 0 && -z ${BLOCKS:-} ]] ||
	die "ROUNDS, ALL and BLOCKS: not with AB=R (its R rounds of one timed block each side)"
case ${ALL:-0} in 0 | 1 | 2) ;; *) die "ALL: '${ALL}' is not 0, 1 or 2" ;; esac
[[ ${GRAPH:-20} =~ ^[0-9]{1,4}$ ]] || die "GRAPH: '${GRAPH}' is not 0..9999 (calls per captured graph)"
[[ ${ITERS:-200} =~ ^[1-9][0-9]{0,6}$ ]] || die "ITERS: '${ITERS}' is not a count 1..9999999"
[[ ${BLOCKS:-5} =~ ^[0-9]{1,3}$ && ${BLOCKS:-5} -ge 5 && ${BLOCKS:-5} -le 100 ]] ||
	die "BLOCKS: '${BLOCKS}' is not 5..100"
[[ ${MAXB:-268435456} =~ ^[0-9]{4,11}$ && ${MAXB:-268435456} -ge 1024 &&
	${MAXB:-268435456} -le 17179869184 ]] || die "MAXB: '${MAXB}' is not a byte count 1024..16G"
case $PIN in
0) pin=() ;;
1) pin=(--pin) ;;
*) die "PIN: '$PIN' is not 0 or 1" ;;
esac
command -v "$PY" >/dev/null 2>&1 || die "no $PY on PATH (set PYTHON=)"
"$PY" -c 'import torch, torch.distributed' >/dev/null 2>&1 ||
	die "PyTorch is not installed for $PY (pip install torch, or set PYTHON=)"
ngpu=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null)
[ "${ngpu:-0}" -ge 2 ] 2>/dev/null || die "needs 2 GPUs or more; PyTorch sees ${ngpu:-none}"
"$PY" -c 'import torch.distributed as d; assert d.is_nccl_available()' >/dev/null 2>&1 ||
	die "this PyTorch has no NCCL backend"
if [ -z "${PENNY_NCCL_REAL:-}" ]; then
	d=$("$PY" -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)
	[ -n "$d" ] && [ -e "$d/lib/libnccl.so.2" ] && export PENNY_NCCL_REAL=$d/lib/libnccl.so.2
fi
mkdir -p "$out" || die "cannot make $out"
work=$(mktemp -d "${TMPDIR:-/tmp}/torch-allreduce.XXXXXX") || die "no temporary directory"
trap 'rm -rf "$work"' EXIT

cd "$top" || exit 2
. "$top/tests/bench/interposer-build.sh"

stamp=$(date -u +%Y-%m-%d)
kind=${KIND:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
	awk '{ print tolower($2) }')x$ngpu}
echo "# torch-allreduce, $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), $kind"
echo "# PyTorch $("$PY" -c 'import torch; print(torch.__version__, "NCCL", torch.cuda.nccl.version())' 2>&1)"
echo "# real NCCL: ${PENNY_NCCL_REAL:-the one PyTorch links}"
rc=0
trun() {
	local np=$1
	shift
	timeout -k 30 "$TIMEOUT" "$PY" -m torch.distributed.run --standalone --nproc-per-node="$np" \
		"$top/tests/bench/torch_allreduce.py" run --graph "${GRAPH:-20}" --iters "${ITERS:-200}" \
		--max-bytes "${MAXB:-268435456}" --blocks "${BLOCKS:-5}" --coll "$coll" ${pin[@]+"${pin[@]}"} "$@"
}
# mode_env MODE: the interposer's settings of a penny run (max, cache) and
# its file names' suffix
mode_env() {
	max=${PENNY_NCCL_MAX_BYTES:-auto} suffix='' cache=${PENNY_NCCL_REGCACHE:-0}
	[ "$1" = penny-all ] && max=1T suffix=-all cache=${PENNY_NCCL_REGCACHE:-64}
	[ "$1" = penny-all-stage ] && max=1T suffix=-all-stage cache=0
}
# launch SIDE: one torchrun of $coll on $np GPUs, NCCL alone (SIDE nccl) or
# through the interposer (a mode); $w-SIDE$tag.json and .log, the JSON
# kept in OUTDIR; 1 when it failed (its JSON removed)
launch() {
	local side=$1 f=$w-$1$tag t0=$SECONDS ok=1
	if [ "$side" = nccl ]; then
		echo "## $round$np GPUs, $coll: NCCL"
		trun "$np" --label nccl --out "$f.json" >"$f.log" 2>&1 || ok=0
	else
		mode_env "$side"
		echo "## $round$np GPUs, $coll: $side (LD_PRELOAD=$lib, PENNY_NCCL_MAX_BYTES=$max, PENNY_NCCL_REGCACHE=$cache)"
		(export PENNY_NCCL_DEBUG=1 PENNY_NCCL_PLUGIN="$plugin" PENNY_NCCL_MAX_BYTES=$max \
			PENNY_NCCL_REGCACHE=$cache LD_PRELOAD="$lib"; trun "$np" --label "$side" --out "$f.json") \
			>"$f.log" 2>&1 || ok=0
	fi
	if [ $ok = 0 ]; then
		tail -n 30 "$f.log"
		echo "## exit: the ${side/nccl/NCCL} run of $coll on $np GPUs failed${round:+ (round $r)}"
		rm -f "$f.json"
		rc=1
		return 1
	fi
	[ "$ROUNDS" = 1 ] || echo "# launch: $((SECONDS - t0)) s"
	[ "$PIN" = 1 ] && [ "$r" = 1 ] && grep -o "# pin: .*" "$f.log" | sort
	if [ "$side" != nccl ]; then
		[ "$r" = 1 ] && grep "^penny-nccl:" "$f.log" | sort | uniq -c | sed 's/^/# /' | head -n 20
		# the interposer's line at penny's first call of the kind
		if ! grep -q "penny runs $call (the first" "$f.log"; then
			echo "## penny ran no $call on $np GPUs: the interposer's lines above say why"
			rc=1
		fi
	fi
	cp "$f.json" "$base-$side$tag.json"
	return 0
}
# compare_pair MODE: this round's NCCL run against MODE's (torch_allreduce.py
# compare); with more than one round only its result and worst-ratio lines
# shown (the rest in OUTDIR)
compare_pair() {
	local mode=$1
	mode_env "$mode"
	set -- "$PY" "$top/tests/bench/torch_allreduce.py" compare "$w-nccl$tag.json" "$w-$mode$tag.json" \
		"$base$suffix$tag"
	if [ "$ROUNDS" = 1 ]; then
		"$@" || rc=1
		return
	fi
	"$@" >"$w-cmp.txt" || rc=1
	echo "# round $r: $mode against NCCL"
	grep -E '^# (results|eager|graph|CUDA)|^#   ' "$w-cmp.txt"
}
# ab: NCCL and penny alternated inside one launch (torch_allreduce.py ab)
ab() {
	local f=$out/torch-${coll//_/}-$stamp-$kind-x$np-ab swap=()
	[ "${AB_SWAP:-0}" = 1 ] && swap=(--swap) f=$f-swap
	[ "${AB_CONTROL:-0}" = 1 ] && swap+=(--control) f=$f-control
	echo "## $np GPUs, $coll: NCCL and penny in one process, $AB rounds${swap:+ (${swap[*]})}"
	if ! (export PENNY_NCCL_DEBUG=1 PENNY_NCCL_PLUGIN="$plugin" LD_PRELOAD="$lib"
		timeout -k 30 "$TIMEOUT" "$PY" -m torch.distributed.run --standalone --nproc-per-node="$np" \
			"$top/tests/bench/torch_allreduce.py" ab --rounds "$AB" --graph "${GRAPH:-20}" \
			--iters "${ITERS:-200}" --max-bytes "${MAXB:-268435456}" --coll "$coll" \
			${pin[@]+"${pin[@]}"} ${swap[@]+"${swap[@]}"} --out "$f") >"$work/ab.log" 2>&1; then
		tail -n 30 "$work/ab.log"
		echo "## exit: the launch failed"
		rc=1
		return
	fi
	grep "^penny-nccl:" "$work/ab.log" | sort | uniq -c | sed 's/^/# /' | head -n 20
	# penny ran the default group, and NCCL the other (the interposer's lines);
	# the control: NCCL both
	if [ "${AB_CONTROL:-0}" = 1 ]; then
		! grep -q "penny runs $call (the first" "$work/ab.log" ||
			{ echo "## the control: penny ran $call"; rc=1; }
		cat "$f.txt"
		return
	fi
	grep -q "penny runs $call (the first" "$work/ab.log" &&
		grep -q "ranks (PENNY_NCCL=off on some rank)" "$work/ab.log" ||
		{ echo "## penny ran no $call, or the NCCL group was not NCCL's: the lines above say why"; rc=1; }
	cat "$f.txt"
}
for np in $GPUS; do
	[ "$ngpu" -ge "$np" ] || { echo "# skip $np GPUs: only $ngpu"; continue; }
	for coll in $COLLS; do
		# the interposer's call and the file names' collective
		case $coll in
		all_reduce) call=ncclAllReduce ;;
		reduce_scatter) call=ncclReduceScatter ;;
		*) call=ncclAllGather ;;
		esac
		if [ "$AB" != 0 ]; then
			ab
			continue
		fi
		base=$out/torch-${coll//_/}-$stamp-$kind-x$np
		w=$work/${coll//_/}-x$np
		modes=penny
		[ "${ALL:-0}" = 1 ] && modes="penny penny-all"
		[ "${ALL:-0}" = 2 ] && modes="penny penny-all penny-all-stage"
		backwards=nccl
		for mode in $modes; do backwards="$mode $backwards"; done
		for ((r = 1; r <= ROUNDS; r++)); do
			tag='' round='' sides="nccl $modes"
			[ "$ROUNDS" = 1 ] || tag=-r$r round="round $r of $ROUNDS, "
			[ $((r % 2)) = 0 ] && sides=$backwards
			# a pair is compared once both have run; a failed NCCL run ends the round
			for side in $sides; do
				if ! launch "$side"; then
					[ "$side" = nccl ] && break
				elif [ "$side" != nccl ]; then
					[ -e "$w-nccl$tag.json" ] && compare_pair "$side"
				else
					for mode in $modes; do
						[ -e "$w-$mode$tag.json" ] && compare_pair "$mode"
					done
				fi
			done
		done
		[ "$ROUNDS" = 1 ] && continue
		# the rounds that ran both sides, per mode
		for mode in $modes; do
			mode_env "$mode"
			nf=() pf=()
			for ((r = 1; r <= ROUNDS; r++)); do
				[[ -e $w-nccl-r$r.json && -e $w-$mode-r$r.json ]] || continue
				nf+=("$w-nccl-r$r.json") pf+=("$w-$mode-r$r.json")
			done
			if [ ${#nf[@]} = 0 ]; then
				echo "## $np GPUs, $coll: no round ran both NCCL and $mode"
				continue
			fi
			echo "## $np GPUs, $coll: NCCL and $mode over ${#nf[@]} rounds"
			"$PY" "$top/tests/bench/torch_allreduce.py" rounds --out "$base$suffix-rounds" \
				--nccl "${nf[@]}" --penny "${pf[@]}" || rc=1
		done
	done
done
echo "# exit $rc"
exit $rc
