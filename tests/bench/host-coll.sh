#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The engine's other collectives (allgather, reducescatter, alltoall,
# broadcast, reduce, sendrecv; src/engine/collrun.h) against Open MPI's on
# this machine, in one run: the same sizes (nccl-tests' size: the whole
# buffer for allgather, reducescatter and alltoall), float, sum, warm-up and
# iterations, alternating the two programs ROUNDS times and keeping the best
# time of each.  Prints per collective and size both times and the speed-up
# MPI/penny (above 1: penny is faster).
#   tests/bench/host-coll.sh [NP...]      (default: 2 4)
# Environment: MINB (1024), MAXB (16777216), FACTOR (4), ROUNDS (3),
# COLLS (all six, comma list), ALGO (auto; a penny algorithm to force),
# FIFO (0; 1: penny's buffers are not registered, every byte goes through
# the shm transport's FIFOs), BUILD (build: where libpenny.a is).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
minb=${MINB:-1024} maxb=${MAXB:-16777216} factor=${FACTOR:-4} rounds=${ROUNDS:-3}
colls=${COLLS:-allgather,reducescatter,alltoall,broadcast,reduce,sendrecv}
algo=${ALGO:-auto}
fifo=
[ "${FIFO:-0}" = 1 ] && fifo=fifo
[[ $minb =~ ^[0-9]+$ && $maxb =~ ^[0-9]+$ && $factor =~ ^[0-9]+$ && $minb -le $maxb && $factor -ge 2 ]] ||
	{ echo "MINB, MAXB and FACTOR are numbers, MINB <= MAXB, FACTOR >= 2" >&2; exit 2; }
[ -f "$build/libpenny.a" ] || { echo "build penny first (make)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mpicc -O2 -o "$out/mpi_coll" "$top/tests/bench/mpi_coll.c"
# shellcheck disable=SC2046
cc -std=c11 -O2 -Wall -Wextra -Werror -I"$top/src" -I"$top/plugins/include" -o "$out/host_coll" \
	"$top/tests/bench/host_coll.c" "$build/libpenny.a" \
	$(pkg-config --libs libibverbs libibumad libibmad hwloc ncursesw libxml-2.0) -lm -lpthread -ldl -lrt
echo "# host collectives: penny vs Open MPI $(mpirun --version 2>/dev/null | head -1 | awk '{print $NF}'), float sum, $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# penny algorithm $algo, ${fifo:+not }registered buffers; broadcast in place (as MPI_Bcast); best of $rounds alternating rounds; time in us (slowest rank's average)"
for np in ${*:-2 4}; do
	extra=
	[ "$np" -gt "$(nproc)" ] && extra=--oversubscribe
	for r in $(seq "$rounds"); do
		mpirun --allow-run-as-root $extra -np "$np" "$out/mpi_coll" "$minb" "$maxb" "$factor" "$colls" \
			>"$out/mpi.$np.$r"
		"$out/host_coll" "$np" "$minb" "$maxb" "$factor" "$colls" "$algo" $fifo >"$out/penny.$np.$r"
	done
	echo
	echo "# np=$np"
	printf '%-14s %10s %12s %12s %9s\n' collective bytes mpi_us penny_us speedup
	python3 - "$out" "$np" "$rounds" <<'PY'
import sys
d, np, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(name):
    best = {}
    for r in range(1, rounds + 1):
        for line in open(f"{d}/{name}.{np}.{r}"):
            c, b, t = line.split()
            k = (c, int(b))
            best[k] = min(best.get(k, float(t)), float(t))
    return best
m, p = load("mpi"), load("penny")
order = []
for k in list(m) + list(p):
    if k not in order:
        order.append(k)
for k in order:
    if k in m and k in p:
        print(f"{k[0]:14s} {k[1]:10d} {m[k]:12.2f} {p[k]:12.2f} {m[k] / p[k]:8.2f}x")
PY
done
