#!/usr/bin/env bash
# penny allreduce-test (host backend) against Open MPI's MPI_Allreduce on
# this machine, same sizes, type (float), op (sum), warm-up and iterations,
# in one run.  Prints per size both times and the speed-up MPI/penny.
#   tests/bench/host-allreduce.sh [NP...]      (default: 2 4)
# Environment: ITERS (default 200), WARMUP (20), MINB (8), MAXB (16777216;
# byte counts in digits),
# ROUNDS (3: alternate the two programs, keep the best time of each).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
PENNY=${PENNY:-$top/penny}
iters=${ITERS:-200} warmup=${WARMUP:-20} minb=${MINB:-8} maxb=${MAXB:-16777216}
[[ $minb =~ ^[0-9]+$ && $maxb =~ ^[0-9]+$ && $minb -le $maxb ]] ||
	{ echo "MINB and MAXB are byte counts in digits, MINB <= MAXB" >&2; exit 2; }
rounds=${ROUNDS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mpicc -O2 -o "$out/mpi_allreduce" "$top/tests/bench/mpi_allreduce.c"
[ -x "$PENNY" ] || { echo "build penny first (make)" >&2; exit 2; }
echo "# host allreduce: penny vs Open MPI $(mpirun --version 2>/dev/null | head -1 | awk '{print $NF}'), float sum, $(nproc) cores, $(uname -r)"
echo "# iters $iters warm-up $warmup, best of $rounds alternating rounds; time in us (slowest rank's average)"
for np in ${*:-2 4}; do
	extra=
	[ "$np" -gt "$(nproc)" ] && extra=--oversubscribe
	for r in $(seq "$rounds"); do
		mpirun --allow-run-as-root $extra -np "$np" "$out/mpi_allreduce" "$minb" "$maxb" 4 "$iters" \
			"$warmup" >"$out/mpi.$np.$r"
		"$PENNY" allreduce-test --np "$np" -b "$minb" -e "$maxb" -f 4 -n "$iters" -w "$warmup" -c 0 \
			--json >"$out/penny.$np.$r.json"
		python3 - "$out/penny.$np.$r.json" >"$out/penny.$np.$r" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    print(r["size"], r["oop"]["time_us"])
PY
	done
	echo
	echo "# np=$np"
	printf '%12s %12s %12s %10s\n' bytes mpi_us penny_us speedup
	python3 - "$out" "$np" "$rounds" <<'PY'
import sys
d, np, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(name):
    best = {}
    for r in range(1, rounds + 1):
        for line in open(f"{d}/{name}.{np}.{r}"):
            b, t = line.split()
            b, t = int(b), float(t)
            best[b] = min(best.get(b, t), t)
    return best
m, p = load("mpi"), load("penny")
for b in sorted(m):
    if b in p:
        print(f"{b:12d} {m[b]:12.2f} {p[b]:12.2f} {m[b] / p[b]:9.2f}x")
PY
done
