#!/usr/bin/env bash
# Alternate two penny binaries, ROUNDS times, on the same sweep (2 ranks,
# float sum, one-shot, two-shot, ring and auto, in and out of place); print
# per size, mode and algorithm the median over the rounds of each binary
# and after/before.
#   alternate.sh BEFORE AFTER   (environment: ROUNDS 5, ITERS 50, WARMUP 10,
#   MINB 4096, MAXB 4194304)
set -eu
before=$1 after=$2 rounds=${ROUNDS:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
	for b in before after; do
		bin=$before
		[ $b = after ] && bin=$after
		"$bin" allreduce-test --np 2 -b "${MINB:-4096}" -e "${MAXB:-4194304}" -f 4 \
			-n "${ITERS:-50}" -w "${WARMUP:-10}" -c 0 -A one-shot,two-shot,ring,auto \
			--json >"$out/$b.$r.json"
	done
	echo "# round $r done, $(uptime)"
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
t = {}
for b in ("before", "after"):
    for r in range(1, rounds + 1):
        for row in json.load(open(f"{d}/{b}.{r}.json"))["results"]:
            for mode in ("oop", "ip"):
                t.setdefault((b, row["algo"], mode, row["size"]), []).append(row[mode]["time_us"])
med = {k: statistics.median(v) for k, v in t.items()}
algos = ["one-shot", "two-shot", "ring", "auto"]
sizes = sorted({k[3] for k in med})
print(f"{'bytes':>8} {'mode':>4} " + " ".join(f"{a + ' b/a':>22}" for a in algos))
for s in sizes:
    for mode in ("oop", "ip"):
        print(f"{s:8d} {mode:>4} " + " ".join(
            f"{med[('before', a, mode, s)]:9.2f}/{med[('after', a, mode, s)]:<9.2f}{med[('after', a, mode, s)] / med[('before', a, mode, s)]:4.2f}"
            for a in algos))
print("# in place over out of place (after):")
for s in sizes:
    print(f"{s:8d} " + " ".join(f"{a}:{med[('after', a, 'ip', s)] / med[('after', a, 'oop', s)]:.2f}x" for a in algos))
PY
