#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The SVG plot of allreduce-test --plot (cmd/plot.c, through tests/helpers/plot-demo):
# well-formed XML, labelled axes and legend, gaps left out, renders.
. "$(dirname "$0")/../lib.sh"

demo=$BUILD/tests/helpers/plot-demo

# check_svg FILE NSERIES: parse with xml.etree; axes, ticks, legend, numbers finite
check_svg() {
	python3 - "$1" "$2" <<'PY'
import math, sys, xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
n = int(sys.argv[2])
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
for want in ["message size (bytes)", "bus bandwidth (GB/s)", "time (\u00b5s)", "1K", "1M",
             "Bus bandwidth", "Time"]:
    assert want in texts, (want, texts[:20])
legend = root.find(".//s:g[@class='legend']", ns)
labels = ["".join(t.itertext()) for t in legend.iter("{http://www.w3.org/2000/svg}text")]
assert len(labels) == n, labels
assert len(set(labels)) == len(labels) or n > 12, labels
for el in root.iter():
    for k in ("x", "y", "x1", "y1", "x2", "y2", "width", "height"):
        if k in el.attrib:
            assert math.isfinite(float(el.attrib[k])), (el.tag, k, el.attrib[k])
    if "points" in el.attrib:
        for pair in el.attrib["points"].split():
            x, y = map(float, pair.split(","))
            assert math.isfinite(x) and math.isfinite(y)
print("ok:", len(texts), "texts,", n, "legend entries")
PY
}

test_expect_success 'one series: valid SVG with axes, ticks and legend' '
	"$demo" 1 one.svg && check_svg one.svg 1 &&
	grep -q ">ring</text>" one.svg
'
test_expect_success 'twelve series with NaN/0/negative values: valid, gaps left out' '
	"$demo" 12 twelve.svg --gaps && check_svg twelve.svg 12 &&
	grep -q "shm &lt;direct&gt; &amp; co" twelve.svg &&
	! grep -qi "nan\|inf" twelve.svg &&
	test "$(grep -c "<polyline" twelve.svg)" -gt 24
'
test_expect_success 'title with XML characters is escaped' '
	"$demo" 2 t.svg --title "a<b & \"c\"" && check_svg t.svg 2 &&
	grep -q "a&lt;b &amp; &quot;c&quot;" t.svg
'
test_expect_success 'no series: both panels say no data' '
	"$demo" 0 none.svg && test "$(grep -c ">no data<" none.svg)" -eq 2
'
if command -v rsvg-convert >/dev/null 2>&1; then
	test_expect_success 'renders to PNG (rsvg-convert)' '
		rsvg-convert -o twelve.png twelve.svg && test -s twelve.png &&
		python3 -c "import sys; d=open(\"twelve.png\",\"rb\").read(24); assert d[:8]==b\"\x89PNG\r\n\x1a\n\"; import struct; w,h=struct.unpack(\">II\", d[16:24]); assert w==1120 and h>500, (w,h)"
	'
else
	test_skip 'renders to PNG' 'rsvg-convert (librsvg2-bin) not installed'
fi
test_done
