#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The nvshmem backend on a cluster, next to cuda (hierarchical) and NCCL:
# run under the cluster's launcher, one task per GPU, e.g.
#   srun -N 2 --ntasks-per-node 8 --gpus-per-node 8 tests/bench/nvshmem-cluster.sh
#   mpirun -np 16 --npernode 8 -H a:8,b:8 -x PATH -x LD_LIBRARY_PATH \
#          -x RAILS=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7 tests/bench/nvshmem-cluster.sh
# Each task runs penny allreduce-test, which finds rank 0 and the job's secret
# from the launcher (penny(1), RENDEZVOUS: the step's first node under srun,
# mpirun's host, a port derived from the job; no fixed port).
# NVSHMEM reaches the other nodes through IBGDA (GPU-initiated RDMA):
#   NVSHMEM_IB_ENABLE_IBGDA=1          the GPU posts its own work requests
#   NVSHMEM_IBGDA_NUM_RC_PER_PE=QPS    RC connections per remote PE (QPS, default 2 here)
#   NVSHMEM_HCA_LIST / NVSHMEM_ENABLE_NIC_PE_MAPPING + NVSHMEM_HCA_PE_MAPPING
#                                      the NICs and which PE uses which (RAILS below)
#   NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME  the interface of the unique-id bootstrap (IFNAME)
# Environment: PENNY (binary, default penny on PATH), ROOT (host:port of rank
# 0, only to override the launcher's), RAILS (e.g. mlx5_0,mlx5_1,...: local
# rank i uses the i-th), MAXB (1G), OUT (results).  NCCL runs here with NVLink
# SHARP off; tests/bench/cluster-allreduce.sh also runs NCCL with it.
set -u
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
export NVSHMEM_IB_ENABLE_IBGDA=${NVSHMEM_IB_ENABLE_IBGDA:-1}
export NVSHMEM_IBGDA_NUM_RC_PER_PE=${QPS:-${NVSHMEM_IBGDA_NUM_RC_PER_PE:-2}}
[ -n "${IFNAME:-}" ] && export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=$IFNAME
rank=${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-}}
nranks=${SLURM_NTASKS:-${OMPI_COMM_WORLD_SIZE:-}}
if [ -z "$rank" ] || [ -z "$nranks" ]; then
	echo "run me under srun or mpirun" >&2
	exit 2
fi
if [ -n "${RAILS:-}" ]; then
	export NVSHMEM_HCA_LIST=$RAILS NVSHMEM_ENABLE_NIC_PE_MAPPING=1
	NVSHMEM_HCA_PE_MAPPING=$(echo "$RAILS" | tr ',' '\n' | sed 's/$/:1:1/' | paste -sd,)
	export NVSHMEM_HCA_PE_MAPPING
fi
where=()
[ -n "${ROOT:-}" ] && where=(--rank "$rank" --nranks "$nranks" --root "$ROOT")
out=${OUT:-results}
mkdir -p "$out"
tag=$(date -u +%Y-%m-%d)-n$nranks
for g in 0 10; do
	timeout -k 10 900 "${PENNY:-penny}" allreduce-test "${where[@]}" \
		--backend nvshmem,cuda,nccl --algo all \
		-b 1K -e "${MAXB:-1G}" -f 4 -d bfloat16 -o sum -n 20 -w 5 -G $g --timeout 120 \
		--csv "$out/nvshmem-cluster-$tag-G$g.csv" || exit $?
done
