#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compare the bytes penny bw moved with what penny top reported meanwhile.

usage: top-bw-check.py BW.json TOP.jsonl TXDEV RXDEV
TOP.jsonl holds penny top samples taken from before the bw run to after it:
top --json's output, or a flight recording (top --record), whose ports keep
the counters as the model has them (dev, tx_Bps, ix/ctr, ...).
The payload TXDEV sent and RXDEV received between the first and the last
sample, and the integral of the rates top printed over the same samples,
must both be within 10% of bytes x iterations of bw's run.  top reports the
netdev's bytes, which include each RoCE v2 packet's headers (Ethernet 14,
IPv4 20, UDP 8, BTH 12, ICRC 4): with top's packet counts those are taken off."""
import json
import sys

HDR = 14 + 20 + 8 + 12 + 4
bw_file, top_file, txdev, rxdev = sys.argv[1:5]
rows = []


def walk(o):
    if isinstance(o, dict):
        if "bw_avg_gbps" in o:
            rows.append(o)
        for v in o.values():
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)


with open(bw_file) as f:
    text = f.read()
try:
    walk(json.loads(text))
except ValueError:
    for line in text.splitlines():
        if line.strip():
            walk(json.loads(line))
if not rows:
    sys.exit("no bw rows in " + bw_file)
moved = sum(r["bytes"] * r["iterations"] for r in rows)

samples = [json.loads(line) for line in open(top_file) if line.strip()]
if samples and "penny_record" in samples[0]:
    # a recording: ix holds the index in ctr of each kind's first counter
    # (other, rx bytes, tx bytes, rx packets, tx packets, ...), a counter is
    # [group, name, kind, scale, width, flags, wraps, raw, value, delta]
    def plain(r):
        def ctr(kind):
            i = r["ix"][kind]
            return r["ctr"][i][8] if i >= 0 else 0
        return {"device": r["dev"], "elapsed": r["elapsed"] or 0,
                "tx_bytes": ctr(2), "rx_bytes": ctr(1), "tx_packets": ctr(4),
                "rx_packets": ctr(3), "tx_bytes_per_sec": r["tx_Bps"] or 0,
                "tx_packets_per_sec": r["tx_pps"] or 0}
    samples = [{"ports": [plain(r) for r in s["ports"]]} for s in samples]
def port(s, dev):
    for p in s["ports"]:
        if p["device"] == dev:
            return p
    return None

first, last = port(samples[0], txdev), port(samples[-1], txdev)
rfirst, rlast = port(samples[0], rxdev), port(samples[-1], rxdev)
tx = (last["tx_bytes"] - first["tx_bytes"]) - HDR * (last["tx_packets"] - first["tx_packets"])
rx = (rlast["rx_bytes"] - rfirst["rx_bytes"]) - HDR * (rlast["rx_packets"] - rfirst["rx_packets"])
# the rates top printed, integrated over each sample's elapsed time
rate_tx = sum((port(s, txdev)["tx_bytes_per_sec"] - HDR * port(s, txdev)["tx_packets_per_sec"])
              * port(s, txdev)["elapsed"] for s in samples[1:])
print("penny bw moved %d B; penny top: %s sent %d B, %s received %d B, rates integrate to %d B "
      "(ratios %.3f %.3f %.3f)" % (moved, txdev, tx, rxdev, rx, rate_tx, tx / moved, rx / moved,
                                   rate_tx / moved))
ok = all(0.9 <= v / moved <= 1.1 for v in (tx, rx, rate_tx))
sys.exit(0 if ok else 1)
