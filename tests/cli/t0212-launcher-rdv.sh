#!/usr/bin/env bash
# The launcher's own rendezvous, in fake launcher environments on one host
# (the real Slurm and Open MPI are in tests/lab/t0180-lab-slurm.sh): ranks
# meet without PENNY_ROOT, two steps on one node do not collide, the secret
# comes from what the launcher gives, and where nothing says where rank 0 is
# the one line names the launcher and the recipe.  Then the rendezvous'
# own hardening: a stranger holding the port learns nothing and is not
# believed, the job's cookie differs per job, a rank that cannot run tells
# the others, /tmp/penny-0 made by another user, an inherited PENNY_ROOT_FD.
. "$(dirname "$0")/../lib.sh"

AR=(allreduce-test -b 8 -e 4K -f 8 -n 2 -w 1 --timeout 10)

# slurm_rank R STEP NODE [ARGS]: rank R of a 2-task step STEP of job $$ on
# two "nodes" (PENNY_NODE_ID) of this host, the step's node list localhost
slurm_rank() {
	local r=$1 step=$2 node=$3
	shift 3
	env SLURM_PROCID=$r SLURM_NTASKS=2 SLURM_LOCALID=0 SLURM_STEP_ID=$step SLURM_JOB_ID=$$ \
		SLURM_STEP_NUM_NODES=2 SLURM_NNODES=2 SLURM_STEP_NODELIST=localhost \
		SLURM_JOB_NODELIST=localhost SLURMD_NODENAME=localhost PENNY_NODE_ID=$node \
		"$PENNY" "$@"
}

test_expect_success 'srun-style step on two nodes: no PENNY_ROOT, the ranks meet, 0 wrong' '
	slurm_rank 1 0 b "${AR[@]}" >out1 2>err1 &
	p1=$!
	within 12 slurm_rank 0 0 a "${AR[@]}" --json >out0 2>err0; ok=$?
	wait $p1; rc1=$?
	cat err0 err1; echo "rc0=$WITHIN_RC rc1=$rc1"
	test $ok -eq 0 && test "$WITHIN_RC" -eq 0 && test "$rc1" -eq 0 && test ! -s err0 &&
	python3 -c "import json; d=json.load(open(\"out0\"))
assert d[\"launcher\"] == \"srun\" and d[\"nranks\"] == 2, d
assert d[\"summary\"][\"wrong\"] == 0"
'

test_expect_success 'two steps of one job on one node at once: ports apart, both complete' '
	for s in 1 2; do
		slurm_rank 1 $s b "${AR[@]}" --debug=BOOT >o1.$s 2>e1.$s &
		eval q$s=$!
		slurm_rank 0 $s a "${AR[@]}" --debug=BOOT >o0.$s 2>e0.$s &
		eval p$s=$!
	done
	rc=0; for p in $p1 $q1 $p2 $q2; do wait $p || rc=1; done
	grep -h "rendezvous Slurm" e0.1 e0.2
	port1=$(grep -o "listens on port [0-9]*" e0.1) port2=$(grep -o "listens on port [0-9]*" e0.2)
	echo "rc=$rc step 1: $port1, step 2: $port2"
	test $rc -eq 0 && test -n "$port1" && test "$port1" != "$port2" &&
	grep -q "Out of bounds values : 0 OK" o0.1 && grep -q "Out of bounds values : 0 OK" o0.2
'

test_expect_success 'the job port taken by another program: rank 0 takes the next, the job completes' '
	slurm_rank 0 7 a allreduce-test -b 8 -e 8 --timeout 0.3 --debug=BOOT >/dev/null 2>probe
	port=$(grep -o "listens on port [0-9]*" probe | grep -o "[0-9]*$")
	test -n "$port" || { cat probe; exit 1; }
	python3 -c "import socket,time,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"\", int(sys.argv[1]))); s.listen(1); print(1, flush=True); time.sleep(15)" $port >held &
	holder=$!
	for i in $(seq 100); do test -s held && break; sleep 0.1; done
	slurm_rank 1 7 b "${AR[@]}" >/dev/null 2>err1 &
	p1=$!
	within 12 slurm_rank 0 7 a "${AR[@]}" --debug=BOOT >out0 2>err0; ok=$?
	wait $p1; rc1=$?; kill $holder; wait $holder
	grep "port" err0 | head -3; cat err1; echo "rc0=$WITHIN_RC rc1=$rc1 held=$port"
	chosen=$(grep -o "listens on port [0-9]*" err0 | grep -o "[0-9]*$")
	test $ok -eq 0 && test "$WITHIN_RC" -eq 0 && test "$rc1" -eq 0 &&
	grep -q "port $port is taken" err0 && test -n "$chosen" && test "$chosen" != "$port"
'

test_expect_success 'rank 0 not on the step first node: it says so at once, exit 2' '
	within 3 test_exit 2 env SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_STEP_ID=0 SLURM_JOB_ID=$$ \
		SLURM_STEP_NODELIST="n[01-02]" SLURMD_NODENAME=n02 "$PENNY" "${AR[@]}" 2>err; ok=$?
	cat err
	test $ok -eq 0 && test "$(wc -l <err)" -eq 1 &&
	grep -q "rank 0 runs on node n02, but the other ranks look for it on n01 (Slurm step $$.0" err &&
	grep -q "give every rank --root HOST:PORT or PENNY_ROOT" err
'

# ompi_rank R KEY HOME: rank R of 2 under a fake mpirun on this host
# (mpirun's address 127.0.0.1), Open MPI's job key KEY, XDG_CONFIG_HOME HOME
ompi_rank() {
	local r=$1 key=$2 home=$3
	shift 3
	env OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 \
		OMPI_COMM_WORLD_LOCAL_SIZE=1 OMPI_MCA_ess_base_jobid=$$ PENNY_NODE_ID=n$r \
		OMPI_MCA_orte_hnp_uri="$$.0;tcp://127.0.0.1:9" \
		OMPI_MCA_orte_precondition_transports=$key XDG_CONFIG_HOME=$home "$PENNY" "$@"
}

test_expect_success 'mpirun-style: rank 0 on mpirun host, the secret from Open MPI job key' '
	key=$(od -An -tx8 -N16 /dev/urandom | tr -d " \n" | sed "s/./&-/16" | cut -c1-33)
	ompi_rank 1 $key $PWD/home1 "${AR[@]}" >out1 2>err1 &
	p1=$!
	within 12 ompi_rank 0 $key $PWD/home0 "${AR[@]}" --json >out0 2>err0; ok=$?
	wait $p1; rc1=$?
	cat err0 err1
	test $ok -eq 0 && test "$WITHIN_RC" -eq 0 && test "$rc1" -eq 0 &&
	test ! -e home0/penny/cookie && test ! -e home1/penny/cookie &&
	python3 -c "import json; d=json.load(open(\"out0\")); assert d[\"launcher\"] == \"mpirun\""
'

test_expect_success 'mpirun-style, rank 0 not on mpirun host: one line at once, exit 2' '
	within 3 test_exit 2 env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 \
		OMPI_COMM_WORLD_LOCAL_SIZE=1 OMPI_MCA_ess_base_jobid=$$ \
		OMPI_MCA_orte_hnp_uri="$$.0;tcp://192.0.2.1:9" "$PENNY" "${AR[@]}" 2>err; ok=$?
	cat err
	test $ok -eq 0 && test "$(wc -l <err)" -eq 1 &&
	grep -q "rank 0 is not on mpirun.s host (192.0.2.1)" err
'

test_expect_success 'a launcher that says nothing of rank 0 (PMI): the launcher, the recipe, at once' '
	within 3 test_exit 2 env PMI_RANK=1 PMI_SIZE=2 "$PENNY" "${AR[@]}" 2>err; ok=$?
	cat err
	test $ok -eq 0 && test "$(wc -l <err)" -eq 1 &&
	grep -q "no rendezvous address for 2 ranks under pmi (it gives none): give every rank --root HOST:PORT or PENNY_ROOT=HOST:PORT" err
'

# A stranger holding the --root port before rank 0: it challenges like rank
# 0, records what rank 1 says, then sends an ABORT of its own (EIO, a scary
# text); prints the hello's 16 header cookie bytes in hex.
stranger_root() {
	python3 - "$1" <<-PY
	import socket, sys
	sys.path.insert(0, "$TOP/tests/helpers")
	import peer
	port = int(sys.argv[1])
	s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	s.bind(("127.0.0.1", port)); s.listen(4); s.settimeout(8)
	c, _ = s.accept()
	tag = peer.job_tag("root:127.0.0.1:%d" % port)
	c.sendall(peer.frame(peer.CHALLENGE, tag, b"\x01" * 16))
	h = c.recv(40 + 216)
	c.sendall(peer.frame(peer.ABORT, h[8:24], b"rank 0 (host vm): GPU 3 has fallen off the bus", seq=5))
	print(h[8:24].hex(), tag.hex())
	c.recv(1); c.close()
	PY
}

test_expect_success 'a stranger on the root port learns no secret-derived cookie and is not believed' '
	port=$(free_port) || exit 1
	stranger_root $port >heard & st=$!
	sleep 0.5
	within 5 env PENNY_COOKIE=s3cret "$PENNY" allreduce-test --rank 1 --nranks 2 \
		--root 127.0.0.1:$port --timeout 4 -b 8 -e 8 2>err; ok=$? rc=$WITHIN_RC
	wait $st
	read said tag <heard
	old=$(python3 -c "import hmac,hashlib,sys
k=hashlib.sha256(b\"s3cret\").digest()
print(hmac.new(k, b\"penny job cookie\0127.0.0.1:$port\", \"sha256\").digest()[:16].hex())")
	cat err; echo "rc=$rc said=$said tag=$tag old=$old"
	test $ok -eq 0 && test "$rc" -eq 2 && test "$said" = "$tag" && test "$said" != "$old" &&
	! grep -q "fallen off the bus" err &&
	grep -q "what listens at 127.0.0.1:$port refused this rank.s proof of the job.s secret" err
'

test_expect_success 'the same secret and --root twice: another cookie for each job' '
	port=$(free_port) || exit 1
	for i in 1 2; do
		PENNY_COOKIE=same penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port \
			-b 8 -e 8 --timeout 10 --debug=BOOT >/dev/null 2>e1.$i &
		p=$!
		PENNY_COOKIE=same penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port \
			-b 8 -e 8 --timeout 10 --debug=BOOT >/dev/null 2>e0.$i || exit 1
		wait $p || exit 1
	done
	j1=$(grep -o "launcher explicit, job [0-9a-f]*" e0.1) j2=$(grep -o "launcher explicit, job [0-9a-f]*" e0.2)
	r1=$(grep -o "launcher explicit, job [0-9a-f]*" e1.1)
	echo "$j1 / $j2 / rank 1: $r1"
	test -n "$j1" && test "$j1" = "$r1" && test "$j1" != "$j2"
'

test_expect_success 'a rank whose own options fail: rank 0 hears why at once, not after --timeout' '
	port=$(free_port) || exit 1
	penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 20 -b 8 -e 8 \
		>/dev/null 2>err0 &
	p0=$!
	within 4 test_exit 2 penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port \
		--timeout 20 -b 8 -e 8 -d nosuch 2>err1; ok=$?
	within 3 wait $p0; rc0=$WITHIN_RC ok0=$?
	cat err0 err1; echo "rc0=$rc0"
	test $ok -eq 0 && test $ok0 -eq 0 && test "$rc0" -eq 2 && test "$(wc -l <err0)" -eq 1 &&
	grep -q "rank 0: rank 1 (host .*, pid [0-9]*) cannot run the job: unknown data type .nosuch." err0
'

test_expect_success 'rank 0 whose own options fail: every rank hears why' '
	port=$(free_port) || exit 1
	for r in 1 2; do
		penny allreduce-test --rank $r --nranks 3 --root 127.0.0.1:$port --timeout 20 -b 8 -e 8 \
			>/dev/null 2>err$r &
		eval p$r=$!
	done
	within 4 test_exit 2 penny allreduce-test --rank 0 --nranks 3 --root 127.0.0.1:$port \
		--timeout 20 -b 8 -e 8 -o nosuch 2>err0; ok=$?
	wait $p1; rc1=$?; wait $p2; rc2=$?
	cat err0 err1 err2
	test $ok -eq 0 && test "$rc1" -eq 2 && test "$rc2" -eq 2 &&
	grep -q "rank 1: rank 0 (host .*) cannot run the job: " err1 &&
	grep -q "rank 2: rank 0 (host .*) cannot run the job: " err2
'

test_expect_success 'an inherited PENNY_ROOT_FD does not break --np' '
	within 20 env PENNY_ROOT_FD=5 "$PENNY" allreduce-test --np 2 -b 8 -e 1K --timeout 10 \
		>out 2>err; ok=$?
	cat err
	test $ok -eq 0 && test "$WITHIN_RC" -eq 0 && grep -q "Out of bounds values : 0 OK" out
'

test_expect_success 'a relative HOME is said as such, not "HOME is not set"' '
	within 3 test_exit 2 env -u XDG_CONFIG_HOME HOME=rel/dir "$PENNY" allreduce-test --rank 0 \
		--nranks 2 --root 127.0.0.1:$(free_port) --timeout 2 -b 8 -e 8 2>err; ok=$?
	cat err
	test $ok -eq 0 && grep -q "HOME=.rel/dir. is not an absolute path" err
'

if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null &&
	command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
	test_expect_success '/tmp/penny-0 made by another user: a root single-host job meets in /run/penny' '
		mkdir -m 1777 faketmp &&
		within 25 unshare -m --propagation private env -u TMPDIR -u XDG_RUNTIME_DIR \
			PENNY="$PENNY" sh -c "mount --bind $PWD/faketmp /tmp && mount -t tmpfs none /run &&
			setpriv --reuid nobody --regid \$(id -g nobody) --clear-groups mkdir -m 700 /tmp/penny-0 &&
			for r in 1 0; do
				OMPI_COMM_WORLD_RANK=\$r OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
				OMPI_MCA_ess_base_jobid=t0212 \"\$PENNY\" allreduce-test -b 8 -e 1K --timeout 10 \
					>/tmp/out\$r 2>/tmp/err\$r & done; wait; ls -ld /run/penny >/tmp/run"; ok=$?
		cat faketmp/err0 faketmp/err1 faketmp/run
		test $ok -eq 0 && grep -q "Out of bounds values : 0 OK" faketmp/out0 &&
		test ! -s faketmp/err0 && test ! -s faketmp/err1 && grep -q "^drwx------ .* root " faketmp/run
	'
else
	test_skip '/tmp/penny-0 made by another user' 'needs root, user nobody, setpriv and unshare -m'
fi
test_done
