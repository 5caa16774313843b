#!/usr/bin/env bash
# penny allreduce-test (host backend) against Open MPI's MPI_Allreduce on
# this machine, same sizes, type (float), op (sum), warm-up and iterations,
# in one run.  Prints per size both times and the speed-up MPI/penny.
#   tests/bench/host-allreduce.sh [NP...]      (default: 2 4)
# Environment: ITERS (default 200), WARMUP (20), MINB (8), MAXB (16777216;
# byte counts in digits), FACTOR (4: the size step of penny's sweeps),
# ROUNDS (3: alternate the two programs, keep the best time of each).
# Then, in the same call, penny alone: every algorithm of ALGOS (one-shot,
# two-shot, ring) and auto, in place and out of place, ROUNDS sweeps; per
# size the median over the rounds of each (auto's fastest and slowest
# round beside it): the fastest algorithm and auto's ratio to it, out of
# place and in place, then every in-place time over its out-of-place time
# (above 1: in place is slower).  FRESH=1: that part with --fresh-input
# (every input rewritten before each call, only the calls timed), where
# out of place no longer reads an input the call before left cached.
# MPI=0: penny alone (no Open MPI run).  RAW=DIR: keep each sweep's JSON
# there (algos.NP.ROUND[.fresh].json).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
PENNY=${PENNY:-$top/penny}
iters=${ITERS:-200} warmup=${WARMUP:-20} minb=${MINB:-8} maxb=${MAXB:-16777216}
[[ $minb =~ ^[0-9]+$ && $maxb =~ ^[0-9]+$ && $minb -le $maxb ]] ||
	{ echo "MINB and MAXB are byte counts in digits, MINB <= MAXB" >&2; exit 2; }
rounds=${ROUNDS:-3} algos=${ALGOS:-one-shot,two-shot,ring} factor=${FACTOR:-4}
[[ $factor =~ ^[0-9]+$ && $factor -ge 2 ]] || { echo "FACTOR is an integer from 2" >&2; exit 2; }
fresh=
[ "${FRESH:-0}" = 1 ] && fresh=--fresh-input
[[ $algos =~ ^[a-z,-]+$ ]] || { echo "ALGOS is a comma list of algorithms" >&2; exit 2; }
mpi=${MPI:-1} raw=${RAW:-}
[[ $mpi =~ ^[01]$ ]] || { echo "MPI is 0 or 1" >&2; exit 2; }
[ -z "$raw" ] || mkdir -p "$raw"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ -x "$PENNY" ] || { echo "build penny first (make)" >&2; exit 2; }
if [ "$mpi" = 1 ]; then
	mpicc -O2 -o "$out/mpi_allreduce" "$top/tests/bench/mpi_allreduce.c"
	echo "# host allreduce: penny vs Open MPI $(mpirun --version 2>/dev/null | head -1 | awk '{print $NF}'), float sum, $(nproc) cores, $(uname -r)"
else
	echo "# host allreduce: penny alone, float sum, $(nproc) cores, $(uname -r)"
fi
echo "# iters $iters warm-up $warmup, $rounds rounds; time in us (slowest rank's average); $(uptime)"
[ "$mpi" = 1 ] && for np in ${*:-2 4}; do
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

# penny alone: auto against the fastest, in place against out of place
for np in ${*:-2 4}; do
	for r in $(seq "$rounds"); do
		"$PENNY" allreduce-test --np "$np" -b "$minb" -e "$maxb" -f "$factor" -n "$iters" -w "$warmup" \
			-c 0 -A "$algos,auto" $fresh --json >"$out/algos.$np.$r.json"
		[ -z "$raw" ] || cp "$out/algos.$np.$r.json" "$raw/algos.$np.$r${fresh:+.fresh}.json"
	done
	echo
	echo "# np=$np: penny's algorithms ($algos) and auto, median of $rounds sweeps, time in us${fresh:+, $fresh}"
	python3 - "$out" "$np" "$rounds" <<'PY'
import json, statistics, sys
d, np, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = {}
for r in range(1, rounds + 1):
    for row in json.load(open(f"{d}/algos.{np}.{r}.json"))["results"]:
        for mode in ("oop", "ip"):
            t.setdefault((row["algo"], mode, row["size"]), []).append(row[mode]["time_us"])
med = {k: statistics.median(v) for k, v in t.items()}
span = {k: f"{min(v):.2f}-{max(v):.2f}" for k, v in t.items()}
algos = sorted({a for a, _, _ in med if a != "auto"})
sizes = sorted({b for _, _, b in med})
print(f"{'bytes':>10} {'mode':>4} {'best':>9} {'best_us':>9} {'auto_us':>9} {'auto_min-max':>15} "
      f"{'auto/best':>9}  " + " ".join(f"{a:>9}" for a in algos))
worst = {"oop": 0.0, "ip": 0.0}
for b in sizes:
    for mode in ("oop", "ip"):
        best = min(algos, key=lambda a: med[(a, mode, b)])
        ratio = med[("auto", mode, b)] / med[(best, mode, b)]
        worst[mode] = max(worst[mode], ratio)
        print(f"{b:10d} {mode:>4} {best:>9} {med[(best, mode, b)]:9.2f} {med[('auto', mode, b)]:9.2f} "
              f"{span[('auto', mode, b)]:>15} {ratio:8.2f}x  "
              + " ".join(f"{med[(a, mode, b)]:9.2f}" for a in algos))
    print(f"{b:10d} {'ip/oop':>14} {'':9} {med[('auto', 'ip', b)] / med[('auto', 'oop', b)]:9.2f}x "
          f"{'':15} {'':9}  " + " ".join(f"{med[(a, 'ip', b)] / med[(a, 'oop', b)]:8.2f}x"
                                   for a in algos))
print(f"# auto's worst ratio to the fastest: out of place {worst['oop']:.2f}x, in place {worst['ip']:.2f}x")
print("# in place over out of place, worst size of each: " +
      ", ".join(f"{a} {max(med[(a, 'ip', b)] / med[(a, 'oop', b)] for b in sizes):.2f}x"
                for a in algos + ["auto"]))
PY
done
