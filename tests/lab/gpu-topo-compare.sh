#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# On a GPU machine: compare penny topo with nvidia-smi.
#
#   tests/lab/gpu-topo-compare.sh            (after make; uses ./penny)
#
# Runs `penny topo --json` and `nvidia-smi topo -m`, then `penny topo --pcie
# --json` and `nvidia-smi topo -mp`, and compares every GPU-GPU cell, and each
# GPU's CPU Affinity and NUMA Affinity.  GPUs are matched by PCI bus id
# (nvidia-smi --query-gpu=index,pci.bus_id), falling back to index order.
# The nvidia-smi matrix is parsed by whitespace, so tabs, padding, NIC columns
# and trailing columns (GPU NUMA ID, ...) do not matter.
#
# Prints the comparison; exit 0 when everything agrees, 1 on any mismatch,
# 2 when it cannot run.  Raw outputs are kept in $OUT_DIR (default: a new
# directory under /tmp, printed at the end).
# Environment: PENNY (penny binary), NVIDIA_SMI (nvidia-smi command),
# PENNY_TOPO_ARGS (extra penny arguments), OUT_DIR.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
penny=${PENNY:-$top/penny}
smi=${NVIDIA_SMI:-nvidia-smi}
out=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/gpu-topo-compare.XXXXXX")}
mkdir -p "$out" || exit 2
# shellcheck disable=SC2206
extra=(${PENNY_TOPO_ARGS:-})

fail() { echo "gpu-topo-compare: $*" >&2; exit 2; }
command -v python3 >/dev/null || fail "python3 is needed"
[ -x "$penny" ] || command -v "$penny" >/dev/null || fail "no penny binary at '$penny' (run make)"
command -v "$smi" >/dev/null || fail "no nvidia-smi ('$smi')"

"$penny" topo --json "${extra[@]}" >"$out/penny.json" 2>"$out/penny.err" ||
	fail "penny topo failed: $(head -1 "$out/penny.err")"
"$penny" topo --pcie --json "${extra[@]}" >"$out/penny-pcie.json" 2>>"$out/penny.err" ||
	fail "penny topo --pcie failed: $(head -1 "$out/penny.err")"
"$penny" topo "${extra[@]}" >"$out/penny.txt" 2>>"$out/penny.err" || true
"$smi" topo -m >"$out/smi-m.txt" 2>"$out/smi.err" || fail "nvidia-smi topo -m failed: $(head -1 "$out/smi.err")"
"$smi" topo -mp >"$out/smi-mp.txt" 2>>"$out/smi.err" || fail "nvidia-smi topo -mp failed"
"$smi" --query-gpu=index,pci.bus_id --format=csv,noheader >"$out/smi-busid.csv" 2>>"$out/smi.err" ||
	: >"$out/smi-busid.csv"

python3 - "$out" <<'PY'
import json, os, re, sys

out = sys.argv[1]
ansi = re.compile(r"\x1b\[[0-9;]*m")


def die(msg):
    print("gpu-topo-compare: " + msg, file=sys.stderr)
    sys.exit(2)


def parse_smi(path):
    """nvidia-smi topo -m/-mp: {row: {"cells": {col: class}, "cpus": str, "numa": str}}."""
    lines = [ansi.sub("", l.rstrip("\n")) for l in open(path, errors="replace")]
    head = None
    for i, l in enumerate(lines):
        t = l.split()
        # the header's first name is GPU0 (indented); GPU0's row goes on with " X "
        if t and t[0] == "GPU0" and (l[0].isspace() or (len(t) > 1 and t[1] != "X")):
            head = i
            break
    if head is None:
        die("no matrix header (a GPU0 column) in %s" % path)
    toks = lines[head].split()
    cols = []
    for t in toks:
        if t == "CPU":  # "CPU Affinity": device columns end here
            break
        cols.append(t)
    rows = {}
    for l in lines[head + 1:]:
        t = l.split()
        if not t:
            break
        name = t[0]
        if name.startswith("Legend"):
            break
        cells = t[1:1 + len(cols)]
        if len(cells) < len(cols):
            die("short row in %s: %r" % (path, l))
        rest = t[1 + len(cols):]
        rows[name] = {
            "cells": dict(zip(cols, cells)),
            "cpus": rest[0] if len(rest) > 0 else None,
            "numa": rest[1] if len(rest) > 1 else None,
        }
    return cols, rows


def cpuset(s):
    if s is None or s in ("N/A", ""):
        return None
    r = set()
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-")
            r.update(range(int(a), int(b) + 1))
        elif part:
            r.add(int(part))
    return r


def norm_busid(s):
    m = re.match(r"\s*([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\.([0-9a-fA-F]+)", s)
    if not m:
        return None
    d, b, dev, f = (int(x, 16) for x in m.groups())
    return "%04x:%02x:%02x.%x" % (d, b, dev, f)


try:
    penny = json.load(open(os.path.join(out, "penny.json")))
    penny_pcie = json.load(open(os.path.join(out, "penny-pcie.json")))
except ValueError as e:
    die("penny's JSON does not parse: %s" % e)
pgpus = {g["pci_busid"]: g for g in penny["gpus"]}
_, m_rows = parse_smi(os.path.join(out, "smi-m.txt"))
_, mp_rows = parse_smi(os.path.join(out, "smi-mp.txt"))
smi_gpus = [r for r in m_rows if re.fullmatch(r"GPU\d+", r)]

# nvidia-smi GPU name -> penny GPU name, by PCI bus id
bus = {}
for l in open(os.path.join(out, "smi-busid.csv")):
    p = [x.strip() for x in l.split(",")]
    if len(p) >= 2 and p[0].isdigit() and norm_busid(p[1]):
        bus["GPU" + p[0]] = norm_busid(p[1])
mapping, bad = {}, 0
for g in smi_gpus:
    b = bus.get(g)
    if b and b in pgpus:
        mapping[g] = pgpus[b]["name"]
    elif not bus and g in [x["name"] for x in penny["gpus"]]:
        mapping[g] = g  # no bus ids from nvidia-smi: same order
    else:
        print("MISMATCH %s (bus id %s): not among penny's GPUs %s" % (g, b, sorted(pgpus)))
        bad += 1
print("gpu-topo-compare: %d GPUs in nvidia-smi, %d in penny (%s, NVLinks from %s)"
      % (len(smi_gpus), len(penny["gpus"]), penny["source"], penny["nvlink_source"] or "nowhere"))
if len(smi_gpus) != len(penny["gpus"]):
    print("MISMATCH GPU count: nvidia-smi %d, penny %d" % (len(smi_gpus), len(penny["gpus"])))
    bad += 1
for g in smi_gpus:
    if g in mapping:
        print("  %-5s = penny %-5s %s" % (g, mapping[g], bus.get(g, "(bus id unknown)")))

cells = 0
for title, rows, pj in (("nvidia-smi topo -m   vs penny topo", m_rows, penny),
                        ("nvidia-smi topo -mp  vs penny topo --pcie", mp_rows, penny_pcie)):
    print("\n%s:\n  %-11s %-10s %-10s" % (title, "pair", "nvidia-smi", "penny"))
    for a in smi_gpus:
        for b in smi_gpus:
            if a == b or a not in mapping or b not in mapping:
                continue
            s = rows.get(a, {"cells": {}})["cells"].get(b)
            p = pj["matrix"].get(mapping[a], {}).get(mapping[b])
            ok = s is not None and s == p
            cells += 1
            bad += not ok
            print("  %-11s %-10s %-10s %s" % (a + "-" + b, s, p, "ok" if ok else "MISMATCH"))

print("\naffinity (nvidia-smi topo -m | penny):")
naff = 0
for a in smi_gpus:
    if a not in mapping:
        continue
    pg = next(x for x in penny["gpus"] if x["name"] == mapping[a])
    r = m_rows[a]
    sc, pc = cpuset(r["cpus"]), cpuset(pg["cpus"])
    sn = r["numa"]
    pn = "N/A" if pg["numa"] < 0 else str(pg["numa"])
    okc = sc == pc
    naff += 1
    bad += not okc
    if sn is None:  # an nvidia-smi without the NUMA Affinity column
        numa = "numa (not shown by nvidia-smi) | %s" % pn
    else:
        okn = sn == pn
        naff += 1
        bad += not okn
        numa = "numa %s | %s %s" % (sn, pn, "ok" if okn else "MISMATCH")
    print("  %-5s cpus %s | %s %s   %s" % (
        a, r["cpus"], pg["cpus"] or "N/A", "ok" if okc else "MISMATCH", numa))

print("\nresult: %d GPU-GPU cells and %d affinities compared: %s"
      % (cells, naff, "all agree" if not bad else "%d MISMATCH(ES)" % bad))
sys.exit(1 if bad else 0)
PY
rc=$?
echo "raw outputs: $out"
exit $rc
