#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny under a real Open MPI across two network-namespace hosts
# (tests/lab/lib-cluster.sh; mpirun reaches them through a plm_rsh_agent):
# the ranks meet at mpirun's address without PENNY_ROOT and without a shared
# home (Open MPI's job key is the secret), several ranks a host run the
# hierarchical algorithm, and mpirun on a host without rank 0 is said at once.
. "$(dirname "$0")/lib-cluster.sh"
cluster_private "$@"
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-cluster.sh"

cluster_need ip nsenter setpriv mpirun python3
cluster_net 2 || cluster_skip "cannot make the network namespaces"
agent=$(cluster_agent)
MPI="timeout 60 mpirun --allow-run-as-root --oversubscribe --mca plm_rsh_agent $agent"
AR="allreduce-test -b 8 -e 64K -f 8 -n 2 -w 1 --timeout 20"
# every host its own home: no secret can come from a shared ~/.config
own_home='XDG_CONFIG_HOME=$PWD/home-$(hostname) exec'

test_expect_success 'mpirun -H n1,n2: rank 0 at mpirun address, the secret from Open MPI job key' '
	on n1 $MPI -H n1,n2 -np 2 sh -c "$own_home \"$PENNY\" $AR --json --debug=BOOT" >out 2>err
	rc=$?
	grep "BOOT rank .: rendezvous" err; echo "rc=$rc"
	test $rc -eq 0 && grep -q "rank 1: rendezvous Open MPI job .*: rank 0 on mpirun.s host (10.77.0.1)" err &&
	test "$(grep -c "the secret: Open MPI.s job key" err)" -eq 2 &&
	test ! -e home-n1/penny/cookie && test ! -e home-n2/penny/cookie &&
	python3 -c "import json; d=json.load(open(\"out\"))
assert d[\"launcher\"] == \"mpirun\" and d[\"nranks\"] == 2 and d[\"nnodes\"] == 2, d
assert d[\"summary\"][\"wrong\"] == 0, d[\"summary\"]"
'

test_expect_success 'mpirun -H n1:2,n2:2 -np 4: hierarchical over tcp between the hosts, 0 wrong' '
	on n1 $MPI -H n1:2,n2:2 -np 4 "$PENNY" $AR --algo all -d float -o sum >out 2>err; rc=$?
	cat err; head -12 out; echo "rc=$rc"
	test $rc -eq 0 && grep -q "4 ranks on 2 nodes" out && grep -q "via tcp" out &&
	grep -q "algorithm: hierarchical" out && test "$(grep -c "Out of bounds values : 0 OK" out)" -ge 3
'

test_expect_success 'mpirun on a host without rank 0: rank 0 says so at once, the job ends' '
	within 40 on ctl $MPI -H n1,n2 -np 2 "$PENNY" allreduce-test -b 8 -e 8 --timeout 20 \
		>out 2>err; ok=$? rc=$WITHIN_RC
	cat err; echo "rc=$rc"
	test $ok -eq 0 && test "$rc" -eq 2 &&
	grep -q "rank 0 is not on mpirun.s host (10.77.0.254), where the other ranks look for it: run mpirun on rank 0.s host" err
'
test_done
