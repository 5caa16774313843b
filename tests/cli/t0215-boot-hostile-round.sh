#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A broken or hostile peer, another round: what is left after t0210 and
# t0260.  A rank whose tcp frames are corrupt (a channel number past
# INT_MAX in the tcp transport's frame header, src/transport/tcp.c) makes
# its peer fail with one line naming it, never crash on a negative index.
# A rank stopped mid-job and resumed says it was stopped (engine/boot.c).
# cost: 12
. "$(dirname "$0")/../lib.sh"

cc=${CC:-cc}
# the shims are preloaded into a sanitized penny too (make SAN=...)
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
# badframe.so: the first tcp data frame this process sends (sendmsg of an
# 8-byte frame header and its data, transport/tcp.c) gets channel
# $BADFRAME_CHAN (a 32-bit number) in its header.
cat >badframe.c <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	static ssize_t (*real)(int, const struct msghdr *, int);
	static int done;
	const char *v = getenv("BADFRAME_CHAN");

	if (!real)
		real = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
	if (v && !done && m->msg_iovlen == 2 && m->msg_iov[0].iov_len == 8) {
		struct iovec iov[2] = { m->msg_iov[0], m->msg_iov[1] };
		struct msghdr mh = *m;
		uint32_t hdr[2];

		memcpy(hdr, iov[0].iov_base, 8);
		hdr[0] = (uint32_t)strtoul(v, NULL, 0);
		iov[0].iov_base = hdr;
		mh.msg_iov = iov;
		done = 1;
		return real(fd, &mh, flags);
	}
	return real(fd, m, flags);
}
C
if ! "$cc" -shared -fPIC -o badframe.so badframe.c -ldl 2>cc.err; then
	cat cc.err
	test_skip 'a tcp frame with a channel past INT_MAX' "LOUD: no C compiler ($cc) for the shim"
else
for chan in 0xffffffff 0x80000000 7; do
test_expect_success "a tcp frame of channel $chan from a broken rank: one line, exit non-zero, no crash" '
	port=$(free_port) || exit 1
	( BADFRAME_CHAN='$chan' LD_PRELOAD=$PWD/badframe.so PENNY_NODE_ID=b exec "$PENNY" \
		allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 10 \
		--transport tcp -b 8 -e 1K -n 1 -w 0 >out1 2>err1 ) & r1=$!
	within 25 env PENNY_NODE_ID=a timeout 30 "$PENNY" allreduce-test --rank 0 --nranks 2 \
		--root 127.0.0.1:$port --timeout 10 --transport tcp -b 8 -e 1K -n 1 -w 0 \
		>out0 2>err0; ok=$? rc0=$WITHIN_RC
	wait $r1; rc1=$?
	cat err0 err1; echo "rc0=$rc0 rc1=$rc1"
	test $ok -eq 0 && test $rc0 -ne 0 && test $rc0 -lt 128 && test $rc1 -ne 0 &&
	test $rc1 -lt 128 && test $rc0 -ne 124 &&
	grep -q "rank 1 (host .*) sent a bad tcp frame (channel $(printf %u '$chan'), " err0 &&
	test "$(wc -l <err0)" -eq 1 && no_procs_left
'
done
fi

# A rank stopped (SIGSTOP) mid-job, past --timeout, then resumed: the others
# name it; it says it was stopped, as it does when stopped in the
# rendezvous (t0815), not "rank 1: ... waiting for rank 1" as if it were
# another.  It is stopped once its tcp mesh is up (PENNY_DEBUG=NET says so).
test_expect_success 'a rank stopped mid-job over tcp and resumed: it says it was stopped' '
	port=$(free_port) || exit 1
	PENNY_DEBUG=NET PENNY_NODE_ID=b "$PENNY" allreduce-test --rank 1 --nranks 2 \
		--root 127.0.0.1:$port --timeout 3 --transport tcp -b 1M -e 1M -n 1000000 -w 0 \
		>out1 2>err1 & p1=$!
	PENNY_NODE_ID=a "$PENNY" allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port \
		--timeout 3 --transport tcp -b 1M -e 1M -n 1000000 -w 0 >out0 2>err0 & p0=$!
	for i in $(seq 600); do grep -q "tcp mesh (tag" err1 && break; sleep 0.05; done
	kill -STOP $p1 && wait $p0; rc0=$?
	kill -CONT $p1; wait $p1; rc1=$?
	cat err0; grep -v " penny NET " err1; echo "rc0=$rc0 rc1=$rc1"
	test $rc0 -eq 2 && test $rc1 -ne 0 && test $rc1 -lt 128 && test "$(wc -l <err0)" -eq 1 &&
	grep -q "rank 0: timed out after 3 s waiting for rank 1 (host " err0 &&
	grep -q "rank 1: this rank (1, host .*) was stopped and resumed during the job" err1 &&
	! grep -q "waiting for rank 1 (host [^)]*)\$" err1 && no_procs_left
'

# Stopped in the tcp mesh (tests/preload/stop-in-mesh.so), resumed once rank
# 0 gave up: it says it was stopped, not that rank 0 failed or was killed.
test_expect_success 'a rank stopped in the tcp mesh and resumed: it says it was stopped' '
	port=$(free_port) || exit 1
	PENNY_TEST_STOP_MESH=1 LD_PRELOAD=$BUILD/tests/preload/stop-in-mesh.so PENNY_NODE_ID=b \
		"$PENNY" allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 3 \
		--transport tcp -b 1K -e 1K >out1 2>err1 & p1=$!
	within 20 env PENNY_NODE_ID=a timeout 30 "$PENNY" allreduce-test --rank 0 --nranks 2 \
		--root 127.0.0.1:$port --timeout 3 --transport tcp -b 1K -e 1K >out0 2>err0
	ok=$? rc0=$WITHIN_RC
	kill -CONT $p1; wait $p1; rc1=$?
	cat err0 err1; echo "rc0=$rc0 rc1=$rc1"
	test $ok -eq 0 && test $rc0 -eq 2 && test $rc1 -ne 0 && test $rc1 -lt 128 &&
	grep -q "waiting for the tcp connection of rank 1 (host " err0 &&
	test "$(wc -l <err1)" -eq 1 &&
	grep -q "rank 1: this rank (1, host .*) was stopped and resumed during the job" err1 &&
	no_procs_left
'

test_done
