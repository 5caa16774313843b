#!/usr/bin/env bash
# Faults at the rendezvous: job sizes past the old fixed limits, launcher
# variables that are not numbers, huge --nranks and --timeout, rendezvous
# files planted by another user, floods of idle strangers, two jobs on one
# address.  Each fails with one line and exit 2 (or completes), in bounded time.
. "$(dirname "$0")/../lib.sh"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
shm_snapshot shm0

test_expect_success '--np 260: one-shot over a group of 260 ranks (no fixed limit of 256)' '
	within 30 timeout 40 "$PENNY" allreduce-test --np 260 --algo one-shot -b 8 -e 8 -n 1 -w 0 \
		--timeout 20 >out 2>err; ok=$?; cat err &&
	test $ok -eq 0 && test "$WITHIN_RC" -eq 0 && grep -q "Out of bounds values : 0 OK" out && test ! -s err
'

test_done
