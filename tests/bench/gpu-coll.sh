#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GPU collectives other than allreduce: penny's cuda plugin against NCCL (the
# nccl plugin) in the same runs, like nccl-tests' all_gather_perf ...
# sendrecv_perf.  First the block helpers' check on one GPU (make
# kernel-check: every type x op against a host reference), then on each GPU
# count of GPUS: every collective, every type x op, odd counts, in and out of
# place (0 wrong expected from both backends), then bfloat16 sum from 1 KiB
# to MAXB without and with CUDA graphs, each with penny's ratio table
# against NCCL.  Ends with one line per part and exit 1 if any failed.
#   tests/bench/gpu-coll.sh [OUTDIR]     (default: results)
# Environment: B (build dir, default build-gpu); PENNY=path/to/penny (its
# shared libraries on LD_LIBRARY_PATH) instead of building $B/penny, which
# needs the RDMA, hwloc and curses development packages; PLUGINDIR=dir with
# penny-cuda.so and penny-nccl.so built before; KCHECK=path to a built
# kernel-check (else make kernel-check); GPUS ("4 2": the counts run, those
# above the machine's skipped); COLLS (all six); MAXB (256M); ITERS (20);
# WARMUP (5); TYPES (bfloat16; "bfloat16 float" times both); XNODE=0 skips
# the part across 2 emulated nodes; XMAXB (64M, its largest size);
# XTRANSPORTS (tcp; "tcp shm": penny's proxy between the nodes, each in
# turn); XGRAPHS (0; "0 10" adds -G 10 runs); CHECK=0 skips the every-type
# passes; SHARE=1 runs a GPU count
# above the machine's with ranks sharing GPUs (--share-gpus: penny's kernels
# only, the every-type pass only: NCCL refuses a shared GPU and the times
# would be the time-slicing's).  NVLink SHARP stays off.  The cuda
# plugin's settings come from the environment: PENNY_CUDA_CO_LL_MAX=256K in
# one run against a run without it (another OUTDIR) compares its LL lines
# with its flag kernels at small sizes (the LL lines are the default since
# that comparison: PENNY_CUDA_CO_LL_MAX=0 runs the flag kernels).  NCCL's
# alltoall and sendrecv in graphs run with NCCL_GRAPH_REGISTER=0 unless it
# is set: with NCCL 2.28.9's registration of user buffers in graphs their
# kernels never finished from 1-4 MiB on 2 x H200 (2026-11-29).
# AB_TWOSTEP=1: on 3 or more GPUs, broadcast's and reduce's timed runs
# again with PENNY_CUDA_CO_TWOSTEP=off (the one-step kernels) in the same
# call, and their times side by side (two steps over one step per size).
set -u
export NCCL_NVLS_ENABLE=0
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/results}
B=${B:-build-gpu}
GPUS=${GPUS:-4 2}
COLLS=${COLLS:-allgather reducescatter alltoall broadcast reduce sendrecv}
MAXB=${MAXB:-256M}
TYPES=${TYPES:-bfloat16}
export PENNY_CUDA_TIMEOUT=${PENNY_CUDA_TIMEOUT:-10}
mkdir -p "$out"
if [ -z "${PENNY_NCCL_LIB:-}" ]; then
	d=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)
	[ -n "$d" ] && [ -e "$d/lib/libnccl.so.2" ] && export PENNY_NCCL_LIB=$d/lib/libnccl.so.2
fi
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
base="$out/gpu-coll-$(date -u +%Y-%m-%d)-h200x$ngpu"
exec > >(tee "$base.txt") 2>&1
echo "# penny GPU collectives bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname)"
nvidia-smi -L 2>&1 | sed 's/^/# /'
nvidia-smi topo -m 2>&1 | head -n $((ngpu + 1)) | sed 's/^/# /'

cd "$top" || exit 2
targets=
[ -n "${PLUGINDIR:-}" ] || targets=plugins
[ -n "${KCHECK:-}" ] || targets="$targets kernel-check"
[ -n "${PENNY:-}" ] || targets="$targets $B/penny"
if [ -n "$targets" ] && ! make -j"$(nproc)" B="$B" CFLAGS=-Wno-error $targets >"$base-build.log" 2>&1; then
	tail -n 30 "$base-build.log"
	echo "# build failed ($targets)"
	exit 2
fi
PENNY=${PENNY:-$top/$B/penny}
KCHECK=${KCHECK:-$top/$B/tests/helpers/kernel-check}
export PENNY_PLUGIN_PATH=${PLUGINDIR:-$top/$B/plugins}
echo "# penny: $PENNY ($("$PENNY" --version 2>&1))"
env | grep '^PENNY_CUDA_' | sed 's/^/# /'
summary=() rc=0
part() { # part NAME STATUS
	summary+=("$(printf '%-44s %s' "$1" "$2")")
	[ "$2" = ok ] || rc=1
}
# an every-type pass that exited R into FILE: its rows and wrong values
# (the #wrong columns, out of place and in place, of every backend's table)
checked() { # checked NAME FILE R
	local bad rows
	bad=$(awk '$1 ~ /^[0-9]+$/ && NF >= 13 { w += $9 + $13 } END { print w + 0 }' "$2")
	rows=$(awk '$1 ~ /^[0-9]+$/ && NF >= 13' "$2" | wc -l)
	echo "## $1: exit $3, $rows rows, $bad wrong values"
	grep -E 'WRONG|rror' "$2" | head -n 6
	part "$1" "$([ "$3" -eq 0 ] && [ "$bad" = 0 ] && [ "$rows" -gt 0 ] && echo ok || echo "FAILED (exit $3, $rows rows, $bad wrong)")"
}
# a timed run that exited R into FILE: its ratio table
timed() { # timed NAME FILE R
	echo "## $1: exit $3"
	sed -n '/ratio/,$p' "$2" | head -n 16
	part "$1" "$([ "$3" -eq 0 ] && echo ok || echo "FAILED (exit $3)")"
}
# reg: NCCL's alltoall and sendrecv in graphs with NCCL_GRAPH_REGISTER=0
# unless it is set (above)
graph_reg() { # graph_reg COLL G
	reg=()
	case $1:$2 in
	alltoall:0 | sendrecv:0) ;;
	alltoall:* | sendrecv:*)
		[ -n "${NCCL_GRAPH_REGISTER-}" ] || reg=(NCCL_GRAPH_REGISTER=0)
		echo "# $1 -G $2: NCCL_GRAPH_REGISTER=${NCCL_GRAPH_REGISTER-0}" ;;
	esac
}

echo "## kernel-check: the block helpers on GPU 0"
timeout 300 "$KCHECK" >"$base-kernel-check.txt" 2>&1
r=$?
grep -E '^not ok|^#' "$base-kernel-check.txt"
echo "# kernel-check: exit $r, $(grep -c '^ok' "$base-kernel-check.txt") ok, $(grep -c '^not ok' "$base-kernel-check.txt") not ok"
part "kernel-check" "$([ $r -eq 0 ] && echo ok || echo "FAILED (exit $r)")"

for np in $GPUS; do
	share='' backends=cuda,nccl
	if [ "$np" -gt "$ngpu" ]; then
		if [ "${SHARE:-0}" != 1 ] || [ "$ngpu" -lt 1 ]; then
			echo "## $np GPUs: skipped (this machine has $ngpu; SHARE=1 shares them)"
			continue
		fi
		share=--share-gpus backends=cuda
		gpus=$(for ((i = 0; i < np; i++)); do echo $((i % ngpu)); done | paste -sd,)
		echo "## $np ranks on $ngpu GPUs (--share-gpus): penny's kernels, results only"
	else
		gpus=$(seq -s, 0 $((np - 1)))
	fi
	for c in $COLLS; do
		if [ "${CHECK:-1}" != 0 ]; then
			f="$base-$c-np$np-check.txt"
			timeout 300 "$PENNY" coll-test "$c" --backend "$backends" --np "$np" --gpus "$gpus" $share \
				-d all -o all -r $((np - 1)) -b 1 -e 1M -f 37 -n 1 -w 0 --timeout 60 >"$f" 2>&1
			checked "$c np$np every type x op ($backends)" "$f" $?
		fi
		[ -n "$share" ] && continue
		for t in $TYPES; do
		for g in 0 10; do
			f="$base-$c-np$np-G$g.txt"
			[ "$t" = bfloat16 ] || f="$base-$c-np$np-$t-G$g.txt"
			graph_reg "$c" "$g"
			env "${reg[@]}" timeout 300 "$PENNY" coll-test "$c" --backend cuda,nccl --np "$np" --gpus "$gpus" -d "$t" -o sum \
				-b 1K -e "$MAXB" -f 4 -n "${ITERS:-20}" -w "${WARMUP:-5}" -G "$g" --timeout 60 >"$f" 2>&1
			timed "$c np$np $t -G $g" "$f" $?
			case ${AB_TWOSTEP:-0}:$c in
			1:broadcast | 1:reduce) ;;
			*) continue ;;
			esac
			[ "$np" -ge 3 ] || continue
			f1=${f%.txt}-onestep.txt
			env "${reg[@]}" PENNY_CUDA_CO_TWOSTEP=off timeout 300 "$PENNY" coll-test "$c" --backend cuda,nccl \
				--np "$np" --gpus "$gpus" -d "$t" -o sum -b 1K -e "$MAXB" -f 4 -n "${ITERS:-20}" \
				-w "${WARMUP:-5}" -G "$g" --timeout 60 >"$f1" 2>&1
			timed "$c np$np $t -G $g one step" "$f1" $?
			echo "## $c np$np $t -G $g: two steps (default) over one step, cuda's time (us)"
			awk '/ratio/ { on = 1 } on && $1 ~ /^[0-9]+$/ && $2 == "cuda" { t[FILENAME, $1] = $4; s[$1] = 1 }
			     END { for (z in s) if (t[ARGV[1], z] && t[ARGV[2], z])
				     printf "%12d %10.2f %10.2f %7.3f\n", z, t[ARGV[1], z], t[ARGV[2], z],
					    t[ARGV[1], z] / t[ARGV[2], z] }' "$f" "$f1" | sort -n
		done
		done
	done
done

# Across nodes: the GPUs as 2 emulated nodes of half of them each
# (PENNY_NODE_ID; the core sets NCCL_HOSTID per node for NCCL, whose
# NET/Socket runs on lo), one process per rank: penny's cuda plugin (its
# kernels inside a node; between nodes the proxy, GPU-driven, or the host
# engine, host-staged, as the core decides per collective) against
# NCCL, each of TYPES, sum, from 1 KiB to XMAXB; with -G only where penny's path
# between nodes is GPU-driven (the host-staged one refuses it).
xjob() { # COLL NODES PER ARGS...
	local c=$1 nodes=$2 per=$3 port=$((20000 + RANDOM % 20000)) r n pids="" err
	shift 3
	err=$(mktemp -d) || return 2
	for ((r = 1; r < nodes * per; r++)); do
		n=$((r / per))
		PENNY_NODE_ID=n$n timeout 300 "$PENNY" coll-test "$c" --rank $r --nranks $((nodes * per)) \
			--root 127.0.0.1:$port --transport tcp --gpus "$(seq -s, $((n * per)) $((n * per + per - 1)))" \
			--timeout 60 "$@" >/dev/null 2>"$err/$r" &
		pids="$pids $!"
	done
	PENNY_NODE_ID=n0 timeout 300 "$PENNY" coll-test "$c" --rank 0 --nranks $((nodes * per)) \
		--root 127.0.0.1:$port --transport tcp --gpus "$(seq -s, 0 $((per - 1)))" --timeout 60 "$@" \
		2>"$err/0"
	r=$?
	for n in $pids; do wait "$n" || r=1; done
	[ $r -eq 0 ] || cat "$err"/*
	rm -rf "$err"
	return $r
}
if [ "${XNODE:-1}" = 1 ] && [ "$ngpu" -ge 2 ]; then
	export NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
	per=$((ngpu / 2))
	for tp in ${XTRANSPORTS:-tcp}; do
	export PENNY_XNODE_TRANSPORT=$tp
	for c in $COLLS; do
		if [ "${CHECK:-1}" != 0 ]; then
			f="$base-$c-xnode2x$per-$tp-check.txt"
			xjob "$c" 2 "$per" --backend cuda,nccl -d all -o all -r 1 -b 1 -e 1M -f 37 -n 1 -w 0 >"$f" 2>&1
			checked "$c 2x$per nodes $tp every type x op" "$f" $?
		fi
		for t in $TYPES; do
		for g in ${XGRAPHS:-0}; do
			f="$base-$c-xnode2x$per-$tp-G$g.txt"
			[ "$t" = bfloat16 ] || f="$base-$c-xnode2x$per-$tp-$t-G$g.txt"
			graph_reg "$c" "$g"
			( [ ${#reg[@]} -eq 0 ] || export "${reg[@]}"
			  xjob "$c" 2 "$per" --backend cuda,nccl -d "$t" -o sum -b 1K -e "${XMAXB:-64M}" \
				-f 4 -n "${ITERS:-20}" -w "${WARMUP:-5}" -G "$g" ) >"$f" 2>&1
			timed "$c 2x$per nodes $tp $t -G $g" "$f" $?
		done
		done
	done
	done
fi
echo "## summary"
printf '%s\n' "${summary[@]}"
exit $rc
