#!/usr/bin/env python3
"""Medians over allreduce-test --json sweeps (tests/bench/host-allreduce.sh
RAW=DIR keeps them): per size and mode the fastest algorithm, auto's ratio
to it, and the ratio of each pick of a candidate table to the fastest.
  analyze.py [--table T] FILE.json...
T: "oop:one-shot@4K,ring@64K,two-shot@4M,ring;ip:..." (algo@max_bytes,
the last without a size: every size above)."""
import json, statistics, sys

def size(s):
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * m[s[-1]] if s[-1] in m else int(s)

def parse_table(t):
    tab = {}
    for part in t.split(";"):
        mode, rules = part.split(":")
        tab[mode] = [(r.split("@")[0], size(r.split("@")[1]) if "@" in r else None)
                     for r in rules.split(",")]
    return tab

def pick(tab, mode, b):
    for a, mx in tab[mode]:
        if mx is None or b <= mx:
            return a

args = sys.argv[1:]
tab = None
if args and args[0] == "--table":
    tab = parse_table(args[1])
    args = args[2:]
t = {}
for f in args:
    for row in json.load(open(f))["results"]:
        for mode in ("oop", "ip"):
            t.setdefault((row["algo"], mode, row["size"]), []).append(row[mode]["time_us"])
med = {k: statistics.median(v) for k, v in t.items()}
algos = sorted({a for a, _, _ in med if a != "auto"})
sizes = sorted({b for _, _, b in med})
has_auto = any(a == "auto" for a, _, _ in med)
print(f"# {len(args)} sweeps, medians (us)")
print(f"{'bytes':>10} {'mode':>4} {'best':>12} " + (f"{'auto/best':>9} " if has_auto else "")
      + (f"{'pick':>12} {'pick/best':>9} " if tab else "") + " ".join(f"{a:>12}" for a in algos))
worst = {}
for b in sizes:
    for mode in ("oop", "ip"):
        have = [a for a in algos if (a, mode, b) in med]
        best = min(have, key=lambda a: med[(a, mode, b)])
        line = f"{b:10d} {mode:>4} {best:>12} "
        if has_auto:
            r = med[("auto", mode, b)] / med[(best, mode, b)]
            worst[("auto", mode)] = max(worst.get(("auto", mode), 0), r)
            line += f"{r:8.2f}x "
        if tab:
            p = pick(tab, mode, b)
            r = med[(p, mode, b)] / med[(best, mode, b)]
            worst[("pick", mode)] = max(worst.get(("pick", mode), 0), r)
            line += f"{p:>12} {r:8.2f}x "
        print(line + " ".join(f"{med[(a, mode, b)]:12.2f}" if a in have else f"{'-':>12}"
                              for a in algos))
    print(f"{b:10d} {'ip/oop':>17} " + (" " * 10 if has_auto else "") + (" " * 23 if tab else "")
          + " ".join(f"{med[(a, 'ip', b)] / med[(a, 'oop', b)]:11.2f}x" if a in have else f"{'-':>12}"
                     for a in algos))
for (w, mode), r in sorted(worst.items()):
    print(f"# {w}'s worst ratio to the fastest, {mode}: {r:.2f}x")
