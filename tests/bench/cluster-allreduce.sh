#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny's GPU allreduce against NCCL on a real cluster, one process per GPU,
# under the cluster's launcher (the prediction to compare with is in
# doc/cross-node-model.md):
#   srun -N 2 --ntasks-per-node 8 --gpus-per-node 8 tests/bench/cluster-allreduce.sh [OUTDIR]
#   mpirun -np 16 --npernode 8 -H a:8,b:8 tests/bench/cluster-allreduce.sh [OUTDIR]
# Every rank runs penny allreduce-test with --backend cuda,nccl (penny's
# GPU-driven path across nodes next to NCCL in the same processes, its ratio
# table at the end), bfloat16 sum, 1 KiB to 1 GiB, without and with CUDA
# graphs; rank 0 writes OUTDIR/cluster-allreduce-DATE-HOST-nN[-G].txt and
# .csv, each only for a run that ran (none for one that could not).
#
# The ranks meet without any setting: rank 0's address and a free port come
# from the launcher (Slurm's step node list, mpirun's address), and so does
# the job's secret where the launcher has one (Open MPI's job key; under
# Slurm rank 0 hands a fresh one out through MUNGE); else every rank needs
# the same secret: /etc/penny/secret on every node, a shared home, or
# PENNY_COOKIE exported before the launcher (srun passes the environment,
# mpirun needs -x PENNY_COOKIE).  PENNY_ROOT=HOST:PORT overrides where rank 0
# listens (see penny(1), ENVIRONMENT).
#
# PENNY (default: penny on PATH, else ./penny), PENNY_PLUGIN_PATH (the
# directories of penny-cuda.so and penny-nccl.so), PENNY_NCCL_LIB (the NCCL to
# compare with), PENNY_COOKIE, PENNY_ROOT and the PENNY_XNODE_* settings pass
# through; MAXB (1G), ITERS (20) and WARMUP (5) set the sweep, GRAPHS (20)
# the calls per CUDA graph of the second run (0: no graph run).  penny's own
# NCCL runs keep NVLink SHARP off (its nccl backend turns NCCL_NVLS_ENABLE
# off), so both sides move the same bytes.  So that penny is not compared
# only with a handicapped NCCL, ALL_REDUCE_PERF (NVIDIA's nccl-tests
# all_reduce_perf, built with MPI=1) also runs, one GPU per rank, with and
# without NVLS (NVLS=both, the default; 0 or 1 for one of them), written as
# ...-nccl-tests[-nvls].txt.  Only on your own cluster: where NVLink
# multicast must stay off (shared or lent machines), set NVLS=0.
# Exit status: penny's worst (2: the job could not run, 1: a run failed).
set -u
out=${1:-results}
penny=${PENNY:-$(command -v penny || echo ./penny)}
rank=${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${PMI_RANK:-${RANK:-0}}}}
size=${OMPI_COMM_WORLD_SIZE:-${SLURM_NTASKS:-${PMI_SIZE:-${WORLD_SIZE:-1}}}}
if [ "$size" -lt 2 ]; then
	echo "cluster-allreduce.sh: run it under srun or mpirun, one process per GPU" >&2
	exit 2
fi
[ -x "$penny" ] || { echo "cluster-allreduce.sh: no penny binary ('$penny'; set PENNY=)" >&2; exit 2; }
case ${NVLS:-both} in 0) modes=0 ;; 1) modes=1 ;; both) modes="0 1" ;;
*) echo "cluster-allreduce.sh: NVLS must be 0, 1 or both" >&2; exit 2 ;; esac
if [ "$rank" = 0 ]; then
	mkdir -p "$out" || exit 2
fi
tag="cluster-allreduce-$(date -u +%Y-%m-%d)-$(hostname -s)-n$size"
rc=0

# run NAME CMD...: rank 0 keeps CMD's table as OUTDIR/NAME.txt when CMD ran
# (exit 0 or 1), none when it could not (2); the others' output is dropped.
run() {
	local name=$1 r
	shift
	if [ "$rank" = 0 ]; then
		"$@" >"$out/.$name.txt.$$"
		r=$?
		if [ $r -ne 2 ] && [ -s "$out/.$name.txt.$$" ]; then
			mv "$out/.$name.txt.$$" "$out/$name.txt" && cat "$out/$name.txt"
		else
			rm -f "$out/.$name.txt.$$"
		fi
	else
		"$@" >/dev/null
		r=$?
	fi
	[ $r -gt $rc ] && rc=$r
	return $r
}

graphs=${GRAPHS:-20}
case $graphs in *[!0-9]* | "") echo "cluster-allreduce.sh: GRAPHS must be a number" >&2; exit 2 ;; esac
for g in 0 $([ "$graphs" -gt 0 ] && echo "$graphs"); do
	name=$tag$([ "$g" -gt 0 ] && echo -G)
	args=(allreduce-test --backend cuda,nccl -d bfloat16 -o sum -b 1K -e "${MAXB:-1G}" -f 4
	      -n "${ITERS:-20}" -w "${WARMUP:-5}" --timeout 120)
	[ "$g" -gt 0 ] && args+=(-G "$g")
	# penny writes the .csv itself (by rename) when the run completes
	[ "$rank" = 0 ] && args+=(--csv "$out/$name.csv")
	run "$name" "$penny" "${args[@]}"
	# a job that could not run will not run with graphs either
	[ $? -eq 2 ] && exit 2
done
if [ -n "${ALL_REDUCE_PERF:-}" ]; then
	for nvls in $modes; do
		name=$tag-nccl-tests$([ "$nvls" = 1 ] && echo -nvls)
		NCCL_NVLS_ENABLE=$nvls run "$name" "$ALL_REDUCE_PERF" -b 1K -e "${MAXB:-1G}" -f 4 -g 1 \
			-d bfloat16 -o sum -n "${ITERS:-20}" -w "${WARMUP:-5}"
	done
fi
exit $rc
