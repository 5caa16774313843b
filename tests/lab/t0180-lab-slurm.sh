#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny under a real Slurm (slurmctld, a slurmd on each of two network-
# namespace hosts, munged; tests/lab/lib-cluster.sh): srun -N 2 meets without
# PENNY_ROOT and without a shared home (rank 0 hands the secret out through
# MUNGE), a batch script is one process and its srun steps are jobs, two
# steps at once and a heterogeneous step meet, penny check runs as a job,
# and tests/bench/cluster-allreduce.sh runs as its header says.
. "$(dirname "$0")/lib-cluster.sh"
cluster_private "$@"
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-cluster.sh"

cluster_need ip nsenter setpriv munged slurmctld slurmd srun sbatch sinfo scontrol python3
cluster_net 2 || cluster_skip "cannot make the network namespaces"
cluster_munge
cluster_slurm
AR="allreduce-test -b 8 -e 64K -f 8 -n 2 -w 1 --timeout 20"
# every node its own home: no secret can come from a shared ~/.config
own_home='XDG_CONFIG_HOME=$PWD/home-$SLURMD_NODENAME exec'

test_expect_success 'srun -N 2 penny allreduce-test: meets from the step, the secret through MUNGE' '
	on ctl timeout 60 srun -N 2 -n 2 sh -c "$own_home \"$PENNY\" $AR --json --debug=BOOT" \
		>out 2>err; rc=$?
	grep -h "the secret:" err; echo "rc=$rc"
	test $rc -eq 0 && grep -q "rank 0: rendezvous Slurm step [0-9]*.0: rank 0 on n1" err &&
	grep -q "rank 1: .*the secret: rank 0.s, through MUNGE" err &&
	! grep -qv BOOT err && test ! -e home-n1/penny/cookie && test ! -e home-n2/penny/cookie &&
	python3 -c "import json; d=json.load(open(\"out\"))
assert d[\"launcher\"] == \"srun\" and d[\"nranks\"] == 2 and d[\"nnodes\"] == 2, d
assert d[\"summary\"][\"wrong\"] == 0, d[\"summary\"]"
'

test_expect_success 'a batch script is one process; its srun steps meet; two steps at once do not collide' '
	cat >batch.sh <<-EOF &&
	#!/bin/sh
	"$PENNY" $AR --json >batch.json || exit 10
	srun -N 2 -n 2 "$PENNY" $AR --json >step0.json &
	srun -N 2 -n 2 "$PENNY" $AR --json >step1.json &
	wait %1 || exit 11
	wait %2 || exit 12
	EOF
	on ctl timeout 90 sbatch -N 2 -n 4 --wait -o batch.out batch.sh; rc=$?
	cat batch.out; echo "rc=$rc"
	test $rc -eq 0 && python3 -c "import json
b = json.load(open(\"batch.json\"))
assert b[\"nranks\"] == 1 and b[\"launcher\"] == \"none\", b
for f in \"step0.json\", \"step1.json\":
    d = json.load(open(f))
    assert d[\"launcher\"] == \"srun\" and d[\"nranks\"] == 2 and d[\"summary\"][\"wrong\"] == 0, d"
'

test_expect_success 'a heterogeneous step (srun A : B): rank 0 in its first component' '
	on ctl timeout 60 srun -N 1 -n 1 "$PENNY" $AR --json : -N 1 -n 2 "$PENNY" $AR >out 2>err; rc=$?
	cat err; echo "rc=$rc"
	test $rc -eq 0 && python3 -c "import json; d=json.load(open(\"out\"))
assert d[\"nranks\"] == 3 and d[\"nnodes\"] == 2 and d[\"summary\"][\"wrong\"] == 0, d"
'

test_expect_success 'srun -N 2 penny check: one verdict for the job' '
	echo "allreduce.size = 65536" >small.conf &&
	on ctl timeout 120 srun -N 2 -n 2 sh -c "$own_home \"$PENNY\" check --config $PWD/small.conf \
		--timeout 30 --json" >out 2>err; rc=$?
	cat err; echo "rc=$rc"
	test $rc -eq 0 && python3 -c "import json; d=json.load(open(\"out\"))
job = [r for r in d[\"results\"] if r[\"node\"] == \"job\"]
assert job and all(r[\"verdict\"] == \"PASS\" for r in job), job
assert {r[\"node\"] for r in d[\"results\"]} >= {\"n1\", \"n2\"}, d[\"results\"]"
'

test_expect_success 'tests/bench/cluster-allreduce.sh as its header says (fake GPU plugins)' '
	PENNY_PLUGIN_PATH=$BUILD/tests/plugins/cuda:$BUILD/tests/plugins/nccl MAXB=4K ITERS=1 \
		WARMUP=0 GRAPHS=2 on ctl timeout 240 srun -N 2 --ntasks-per-node 1 \
		"$TOP/tests/bench/cluster-allreduce.sh" res >out 2>err; rc=$?
	cat err; ls res; echo "rc=$rc"
	test $rc -eq 0 && test "$(ls res/*.txt | wc -l)" -eq 2 && test "$(ls res/*.csv | wc -l)" -eq 2 &&
	grep -q "Out of bounds values : 0 OK" res/*-n2.txt && grep -q "ratios against nccl" res/*-n2.txt
'

test_expect_success 'the bench: penny exit 2 stays 2 and leaves no empty result files' '
	PENNY_PLUGIN_PATH=$PWD/none MAXB=4K ITERS=1 WARMUP=0 on ctl timeout 60 srun -N 2 \
		--ntasks-per-node 1 "$TOP/tests/bench/cluster-allreduce.sh" bad >out 2>err; rc=$?
	head -n 3 err; echo "rc=$rc"; ls -la bad
	test $rc -eq 2 && test -z "$(find bad -type f -empty)" && test -z "$(ls bad)"
'
test_done
