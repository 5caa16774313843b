# SPDX-License-Identifier: MIT
# A penny check job of four ranks on two emulated nodes, for the tests of
# what check does across nodes (t0847, t0848).
#   . tests/helpers/checkjob.sh; rail_tree DIR; job4 ARGS...
. "$(dirname "${BASH_SOURCE[0]}")/mksysfs.sh"

# A node of two GPUs, each with its rail NIC on its own PCIe switch: GPU0
# (03:00.0) with mlx5_0, GPU1 (13:00.0) with mlx5_3, both ports ACTIVE.
rail_tree() {
	sys_root "$1" gpu01 && sys_cpus 4 1 &&
		PCI_NUMA=0 sys_switch 0x00 && PCI_NUMA=0 sys_switch 0x10 &&
		sys_ib mlx5_0 0000:04:00.0 && sys_ib mlx5_3 0000:14:00.0 &&
		sys_port mlx5_0 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand &&
		sys_port mlx5_3 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand >/dev/null
}

# job4 ARGS...: penny check ARGS --json as ranks 0..3 on nodes n0 n0 n1 n1
# (PENNY_NODE_ID); rank 0's JSON in out.json (every rank's in outR.json),
# stderr in err0..err3, the exit codes in rc ("1111"), seconds in took
job4() {
	local port r t0 ids=(n0 n0 n1 n1) pids=()
	port=$(free_port) || return 1
	t0=$(date +%s.%N)
	for r in 3 2 1 0; do
		PENNY_NODE_ID=${ids[$r]} "$PENNY" check --rank $r --nranks 4 --root 127.0.0.1:$port \
			"$@" --json >out$r.json 2>err$r &
		pids[$r]=$!
	done
	rc=
	for r in 0 1 2 3; do wait ${pids[$r]}; rc="$rc$?"; done
	cp out0.json out.json
	took=$(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" \
		"$(date +%s.%N)" "$t0")
	echo "rc=$rc took=$took"
}
