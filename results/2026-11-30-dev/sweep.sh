#!/usr/bin/env bash
# The sweeps of this directory: 2 ranks over shm, float sum, with and
# without --fresh-input, REPS repetitions of ROUNDS sweeps each (raw JSON
# kept in raw-TAG-np2-{cached,fresh}-REP/, the summary in
# host-allreduce-np2-TAG-{cached,fresh}-REP.txt).
#   results/2026-11-30-dev/sweep.sh TAG PENNY   (environment: as
#   tests/bench/host-allreduce.sh; REPS, default 2)
set -eu
tag=$1 penny=$2
d=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$d/../.." && pwd)
export PENNY=$penny MPI=0
for rep in $(seq "${REPS:-2}"); do
	for fr in 0 1; do
		kind=cached
		[ "$fr" = 1 ] && kind=fresh
		FRESH=$fr RAW=$d/raw-$tag-np2-$kind-$rep "$top/tests/bench/host-allreduce.sh" 2 \
			>"$d/host-allreduce-np2-$tag-$kind-$rep.txt" 2>&1
	done
done
