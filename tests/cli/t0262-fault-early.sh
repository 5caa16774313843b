#!/usr/bin/env bash
# Issue 42, what was left after the rendezvous' own hardening (t0212):
# allreduce-test's outputs on one file refused like check's and top's; a
# rank whose command line or environment fails before the command runs
# tells rank 0 why (rank 0 fails at once, not after --timeout); a
# single-host launcher job whose usual rendezvous directories another user
# made first meets in one of this user's own, or says why none is.
. "$(dirname "$0")/../lib.sh"

AR=(allreduce-test -b 8 -e 8 -n 1 -w 0)

test_expect_success 'allreduce-test: --csv and --plot on one file, however spelled: refused, nothing written' '
	: >kept && ln -s . here &&
	for pair in "s.x s.x" "s.x ./s.x" "s.x here/s.x" "kept here/kept"; do
		set -- $pair
		test_exit 2 "$PENNY" "${AR[@]}" --csv $1 --plot $2 >out 2>err || exit 1
		cat err
		test "$(wc -l <err)" -eq 1 && test ! -s out &&
		grep -q "^penny allreduce-test: --csv and --plot name the same file .$1.$" err || exit 1
	done
	test ! -e s.x && test ! -s kept
'

test_expect_success 'allreduce-test: --tune-out on --csv, --plot on --plan, PENNY_TUNE_FILE as --tune-out: refused' '
	test_exit 2 "$PENNY" "${AR[@]}" --csv t.x --tune-out ./t.x 2>err1 &&
	echo "{}" >p.json &&
	test_exit 2 "$PENNY" "${AR[@]}" --plan p.json --plot p.json 2>err2 &&
	: >tune.txt &&
	test_exit 2 env PENNY_TUNE_FILE=tune.txt "$PENNY" "${AR[@]}" --tune-out tune.txt 2>err3 &&
	cat err1 err2 err3 &&
	grep -q "^penny allreduce-test: --csv and --tune-out name the same file .t.x.$" err1 &&
	grep -q "^penny allreduce-test: --plot and --plan name the same file .p.json.$" err2 &&
	grep -q "^penny allreduce-test: --tune-out and PENNY_TUNE_FILE name the same file .tune.txt.$" err3 &&
	test "$(cat p.json)" = "{}" && test ! -s tune.txt
'

test_expect_success 'allreduce-test: --csv and --plot on two files still writes both' '
	"$PENNY" "${AR[@]}" --csv a.csv --plot a.svg >out 2>err &&
	test ! -s err && grep -q "^algo,size," a.csv && grep -q "<svg" a.svg
'

# early_case HOW CMD...: rank 1 runs CMD (@ROOT@ is the rendezvous) and fails
# before its command runs; rank 0 waits with --timeout 20
early_case() {
	local how=$1 port a args=()
	shift
	port=$(free_port) || return 1
	for a in "$@"; do args+=("${a/@ROOT@/127.0.0.1:$port}"); done
	"$PENNY" "${AR[@]}" --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 20 \
		>/dev/null 2>err0 &
	p0=$!
	within 5 test_exit 2 "${args[@]}" 2>err1 || { kill $p0; return 1; }
	within 4 wait $p0; rc0=$WITHIN_RC ok0=$?
	cat err0 err1; echo "$how: rc0=$rc0 in ${WITHIN_SECS}s"
	test $ok0 -eq 0 && test "$rc0" -eq 2 && test "$(wc -l <err0)" -eq 1 && test "$(wc -l <err1)" -eq 1 &&
	grep -q "rank 0: rank 1 (host .*, pid [0-9]*) cannot run the job: " err0
}

test_expect_success 'rank 1 with an unknown option before --rank: rank 0 hears why at once' '
	early_case unknown "$PENNY" allreduce-test --bogus -b 8 -e 8 --rank 1 --nranks 2 \
		--root @ROOT@ --timeout 20 &&
	grep -q "cannot run the job: unknown option .--bogus." err0
'

test_expect_success 'rank 1 with a bad value: rank 0 hears why at once' '
	early_case value "$PENNY" allreduce-test --rank 1 --nranks 2 --root @ROOT@ \
		-b xyz -e 8 --timeout 20 &&
	grep -q "cannot run the job: invalid size .xyz. for .-b." err0
'

test_expect_success 'rank 1 with a bad --debug: rank 0 hears why at once' '
	early_case debug "$PENNY" allreduce-test --rank 1 --nranks 2 --root @ROOT@ \
		-b 8 -e 8 --timeout 20 --debug=nosuch
'

test_expect_success 'a command line that fails outside a job is one line, at once' '
	within 5 test_exit 2 "$PENNY" allreduce-test --bogus 2>err && cat err &&
	test "$(wc -l <err)" -eq 1
'

test_expect_success 'a stale PENNY_ROOT_FD does not break a process alone, nor --np' '
	exec 7</dev/null &&
	PENNY_ROOT_FD=7 "$PENNY" "${AR[@]}" >out 2>err && test ! -s err &&
	grep -q "Out of bounds values : 0 OK" out &&
	PENNY_ROOT_FD=7 "$PENNY" "${AR[@]}" --np 2 >out 2>err && test ! -s err &&
	grep -q "Out of bounds values : 0 OK" out
'

test_expect_success '... but rank 0 of a job is still told what is wrong with it' '
	exec 7</dev/null &&
	within 3 test_exit 2 env PENNY_ROOT_FD=7 "$PENNY" "${AR[@]}" --rank 0 --nranks 2 \
		--root 127.0.0.1:$(free_port) --timeout 2 2>err && cat err &&
	grep -q "PENNY_ROOT_FD=7 is not a TCP socket listening on port" err
'

if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null &&
	command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
	# rdv_job ENV...: a 2-rank mpirun-style job on this host in a mount
	# namespace where /tmp is faketmp, /run is a fresh tmpfs (read-only
	# with RO=1) and nobody made /tmp/penny-0 first (ENV: env's options first)
	rdv_job() {
		mkdir -p -m 1777 faketmp &&
		within 25 unshare -m --propagation private env -u TMPDIR -u XDG_RUNTIME_DIR \
			-u XDG_CACHE_HOME "$@" PENNY="$PENNY" sh -c "mount --bind $PWD/faketmp /tmp &&
			mount -t tmpfs \${RO:+-o ro} none /run &&
			setpriv --reuid nobody --regid \$(id -g nobody) --clear-groups mkdir -m 700 /tmp/penny-0 &&
			for r in 1 0; do
				OMPI_COMM_WORLD_RANK=\$r OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
				OMPI_MCA_ess_base_jobid=t0262 \"\$PENNY\" allreduce-test -b 8 -e 1K --timeout 4 \
					>/tmp/out\$r 2>/tmp/err\$r & done; wait"
	}
	test_expect_success '/tmp/penny-0 made by another user, TMPDIR=/tmp: root meets in /run/penny' '
		rdv_job TMPDIR=/tmp; ok=$?
		cat faketmp/err0 faketmp/err1
		test $ok -eq 0 && grep -q "Out of bounds values : 0 OK" faketmp/out0 &&
		test ! -s faketmp/err0 && test ! -s faketmp/err1
	'
	test_expect_success '... and /run read-only: the job meets in HOME/.cache/penny' '
		rm -rf faketmp && mkdir -p -m 1777 faketmp && mkdir -m 700 faketmp/home &&
		rdv_job RO=1 HOME=/tmp/home; ok=$?
		cat faketmp/err0 faketmp/err1; ls -ld faketmp/home/.cache/penny/rdv-*
		test $ok -eq 0 && grep -q "Out of bounds values : 0 OK" faketmp/out0 &&
		test ! -s faketmp/err0 && test ! -s faketmp/err1 &&
		test "$(stat -c %a faketmp/home/.cache/penny/rdv-*)" = 700 &&
		test -z "$(ls -A faketmp/home/.cache/penny/rdv-*)"
	'
	test_expect_success '... and no HOME: rank 0 says each place it tried, at once' '
		rm -rf faketmp &&
		rdv_job -u HOME RO=1; ok=$?
		cat faketmp/err0 faketmp/err1
		test $ok -eq 0 && test "$(wc -l <faketmp/err0)" -eq 1 &&
		grep -q "rank 0: no private directory for the rendezvous file: cannot create ./run/penny.: Read-only file system; refusing ./tmp/penny-0. for the rendezvous: owned by uid [1-9]" faketmp/err0 &&
		grep -q "set TMPDIR to a directory of yours" faketmp/err0
	'
else
	test_skip 'rendezvous directories made by another user' 'needs root, user nobody, setpriv and unshare -m'
fi
test_done
