#!/usr/bin/env bash
# Launchers: Open MPI's mpirun, torchrun-style environment, and two hosts
# made of network namespaces joined by a veth pair (ranks over tcp).
. "$(dirname "$0")/../lib.sh"

if command -v mpirun >/dev/null; then
	test_expect_success 'mpirun -np 4: ranks from OMPI_COMM_WORLD_*, 0 wrong' '
		timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 "$PENNY" allreduce-test \
			--timeout 30 -b 8 -e 64K -f 8 --algo ring,two-shot,simple-ring -n 2 --json >out 2>err &&
		python3 -c "import json; d=json.load(open(\"out\"))
assert d[\"launcher\"] == \"mpirun\" and d[\"nranks\"] == 4, d
assert d[\"summary\"][\"wrong\"] == 0"
	'
else
	test_skip 'mpirun -np 4' 'mpirun not installed'
fi

test_expect_success 'torchrun-style RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT' '
	port=$(free_port) || exit 1
	export MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2
	RANK=1 LOCAL_RANK=1 "$PENNY" allreduce-test --timeout 20 -b 1K -e 8K -f 2 >/dev/null 2>err1 &
	p1=$!
	RANK=0 LOCAL_RANK=0 penny allreduce-test --timeout 20 -b 1K -e 8K -f 2 --json >out &&
	wait $p1 && python3 -c "import json; d=json.load(open(\"out\")); assert d[\"launcher\"] == \"torchrun\" and d[\"nranks\"] == 2"
'

netns_ok() { [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && ip netns add penny-probe-$$ 2>/dev/null &&
	ip netns del penny-probe-$$; }
if netns_ok; then
	A=penny-a-$$ B=penny-b-$$
	cleanup() { ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null; }
	trap 'cleanup; rm -rf "$TRASH"' EXIT
	ip netns add $A && ip netns add $B &&
	ip link add pa-$$ type veth peer name pb-$$ &&
	ip link set pa-$$ netns $A && ip link set pb-$$ netns $B &&
	ip -n $A addr add 10.231.0.1/24 dev pa-$$ && ip -n $B addr add 10.231.0.2/24 dev pb-$$ &&
	ip -n $A link set pa-$$ up && ip -n $B link set pb-$$ up &&
	ip -n $A link set lo up && ip -n $B link set lo up
	test_expect_success 'two netns hosts x 2 ranks: hierarchical over tcp across the veth, 0 wrong' '
		port=23456 pids=
		for r in 1 2 3; do
			ns=$A; [ $r -ge 2 ] && ns=$B
			ip netns exec $ns "$PENNY" allreduce-test --rank $r --nranks 4 --root 10.231.0.1:$port \
				--timeout 30 --algo all -b 1 -e 300K -f 23 -d float -o sum -n 2 -w 1 \
				>/dev/null 2>err$r &
			pids="$pids $!"
		done
		ip netns exec $A "$PENNY" allreduce-test --rank 0 --nranks 4 --root 10.231.0.1:$port \
			--timeout 30 --algo all -b 1 -e 300K -f 23 -d float -o sum -n 2 -w 1 >out 2>err0 &&
		for p in $pids; do wait $p || { cat err*; exit 1; }; done &&
		cat out | head -12 &&
		grep -q "4 ranks on 2 nodes" out && grep -q "via tcp" out &&
		grep -q "algorithm: hierarchical" out && ! grep -q FAILED out &&
		test "$(grep -c "Out of bounds values : 0 OK" out)" -ge 5
	'
else
	test_skip 'network-namespace hosts' 'needs root and ip netns'
fi
test_done
