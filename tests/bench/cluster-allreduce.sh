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
# graphs; rank 0 writes OUTDIR/cluster-allreduce-DATE-HOST-NxG[-G].txt and
# .csv.  PENNY (default: penny on PATH, else ./penny), PENNY_PLUGIN_PATH
# (the directory of penny-cuda.so and penny-nccl.so), PENNY_NCCL_LIB (the
# NCCL to compare with) and the PENNY_XNODE_* settings pass through; MAXB
# (1G), ITERS (20) and WARMUP (5) set the sweep.  NVLink SHARP stays off
# so both sides move the same bytes.
set -u
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
out=${1:-results}
penny=${PENNY:-$(command -v penny || echo ./penny)}
rank=${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${PMI_RANK:-${RANK:-0}}}}
size=${OMPI_COMM_WORLD_SIZE:-${SLURM_NTASKS:-${PMI_SIZE:-${WORLD_SIZE:-1}}}}
if [ "$size" -lt 2 ]; then
	echo "cluster-allreduce.sh: run it under srun or mpirun, one process per GPU" >&2
	exit 2
fi
[ -x "$penny" ] || { echo "cluster-allreduce.sh: no penny binary ('$penny'; set PENNY=)" >&2; exit 2; }
mkdir -p "$out" || exit 2
tag="cluster-allreduce-$(date -u +%Y-%m-%d)-$(hostname -s)-n$size"
rc=0
for g in 0 20; do
	name=$tag$([ $g -gt 0 ] && echo -G)
	args=(allreduce-test --backend cuda,nccl -d bfloat16 -o sum -b 1K -e "${MAXB:-1G}" -f 4
	      -n "${ITERS:-20}" -w "${WARMUP:-5}" --timeout 120)
	[ $g -gt 0 ] && args+=(-G $g)
	if [ "$rank" = 0 ]; then
		"$penny" "${args[@]}" --csv "$out/$name.csv" | tee "$out/$name.txt" || rc=1
	else
		"$penny" "${args[@]}" >/dev/null || rc=1
	fi
done
exit $rc
