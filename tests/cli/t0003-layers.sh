#!/usr/bin/env bash
# The layer rule of src/ (src/README.md): every '#include "..."' of a file
# under src/ goes to its own folder or a lower one, in the order
#   base < node < transport < engine < gpu < harness < check,
# plan uses base and node only (gpu, harness and check may use plan; engine may
# not), top (penny top's application) uses base and node only, nothing
# includes in a cycle (file or folder), no two modules (a .c with the
# header of its name) depend on each other through the functions they
# call, however long the circle, nothing in src/check/ but check.c
# includes the driver's check.h, and nothing in src/ includes cmd/.
# A failure names the offending edge: "src/a/x.c -> src/b/y.h".
. "$(dirname "$0")/../lib.sh"

# layers MODE [SRC]: check one rule over the include graph of SRC (default
# $TOP/src); prints each offending edge and exits 1 when there is one.
layers() {
	python3 - "$1" "${2:-$TOP/src}" "$TOP" <<'PY'
import os, re, sys

mode, src, top = sys.argv[1], os.path.realpath(sys.argv[2]), os.path.realpath(sys.argv[3])
cmd = os.path.join(top, "cmd")
may = {
	"base": {"base"},
	"node": {"base", "node"},
	"transport": {"base", "node", "transport"},
	"engine": {"base", "node", "transport", "engine"},
	"plan": {"base", "node", "plan"},
	"top": {"base", "node", "top"},
	"gpu": {"base", "node", "transport", "engine", "plan", "gpu"},
	"harness": {"base", "node", "transport", "engine", "plan", "gpu", "harness"},
	"check": {"base", "node", "transport", "engine", "plan", "gpu", "harness", "check"},
}
drivers = {"check"}	# rooms whose <room>.c drives the rest of the room
inc_re = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
def rel(p):
	return "src/" + os.path.relpath(p, src) if p.startswith(src + os.sep) else os.path.relpath(p, top)

files = []
for d, _, names in os.walk(src):
	files += [os.path.join(d, n) for n in names if n.endswith((".c", ".h"))]
edges = []		# (from, to) real paths; to may be outside src
for f in sorted(files):
	for line in open(f, errors="replace"):
		m = inc_re.match(line)
		if not m:
			continue
		name = m.group(1)
		to = None
		for base in (os.path.dirname(f), src, os.path.join(top, "plugins/include")):
			if os.path.exists(os.path.join(base, name)):
				to = os.path.realpath(os.path.join(base, name))
				break
		if to is None and (name.startswith("cmd/") or os.path.exists(os.path.join(cmd, os.path.basename(name)))):
			to = os.path.join(cmd, os.path.basename(name))
		if to is None:
			print("%s: cannot find \"%s\"" % (rel(f), name))
			sys.exit(1)
		edges.append((f, to))

def folder(p):
	r = os.path.relpath(p, src)
	return r.split(os.sep)[0] if os.sep in r and not r.startswith("..") else None

# Every cycle of graph (node -> its successors) once per DFS back edge.
def find_cycles(graph, on_cycle):
	state, stack = {}, []
	def dfs(n):
		state[n] = 1
		stack.append(n)
		for m in sorted(graph.get(n, ())):
			if state.get(m) == 1:
				on_cycle(stack[stack.index(m):] + [m])
			elif not state.get(m):
				dfs(m)
		stack.pop()
		state[n] = 2
	for n in sorted(graph):
		if not state.get(n):
			dfs(n)

bad = []
if mode == "cmd":
	bad = ["%s -> %s (src/ never includes cmd/)" % (rel(a), rel(b)) for a, b in edges
	       if b == cmd or b.startswith(cmd + os.sep)]
elif mode == "layers":
	for f in sorted(files):
		if folder(f) not in may:
			bad.append("%s: folder '%s' has no layer (tests/cli/t0003-layers.sh)" % (rel(f), folder(f) or "src"))
	for a, b in edges:
		fa, fb = folder(a), folder(b)
		if b.startswith(src + os.sep) and fa in may and fb not in may.get(fa, ()):
			bad.append("%s -> %s (%s may use %s)" % (rel(a), rel(b), fa, ", ".join(sorted(may[fa]))))
	# Inside a room with a driver (check/check.c over the checks), no arrow
	# back up: the driver's header is its .c's alone, each check's own.
	for a, b in edges:
		d = folder(a)
		if d in drivers and b == os.path.join(src, d, d + ".h") and \
		   os.path.basename(a) not in (d + ".c", d + ".h"):
			bad.append("%s -> %s (only %s/%s.c includes its driver)" % (rel(a), rel(b), d, d))
elif mode == "module-cycles":
	# A module is a .c file with the header of its name (comm.c + comm.h); a
	# header without a .c of its name is a module of its own.  A module
	# depends on the module whose .c defines a function its .c names.
	def mod(p):
		return os.path.splitext(p)[0]
	def clean(t):
		t = re.sub(r"/\*.*?\*/", " ", t, flags=re.S)
		t = re.sub(r"//[^\n]*", " ", t)
		return re.sub(r'"(\\.|[^"\\\n])*"', '""', t)
	def_re = re.compile(r"^(?!static\b|return\b|if\b|else\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\([^;]*$", re.M)
	text = {f: clean(open(f, errors="replace").read()) for f in files}
	owner = {}
	for f in sorted(files):
		if f.endswith(".c"):
			for m in def_re.finditer(text[f]):
				owner.setdefault(m.group(1), mod(f))
	graph = {}
	for f in sorted(x for x in files if x.endswith(".c")):
		for name in sorted(set(re.findall(r"\b[A-Za-z_]\w*\b", text[f]))):
			o = owner.get(name)
			if o and o != mod(f):
				graph.setdefault(mod(f), {}).setdefault(o, "calls " + name)
	seen = set()
	def module_cycle(cyc):
		if frozenset(cyc) not in seen:
			seen.add(frozenset(cyc))
			bad.append("cycle: " + " -> ".join("%s (%s)" % (rel(x), graph[x][y])
				for x, y in zip(cyc, cyc[1:])) + " -> " + rel(cyc[-1]))
	find_cycles(graph, module_cycle)
elif mode in ("file-cycles", "folder-cycles"):
	graph = {}
	for a, b in edges:
		if not b.startswith(src + os.sep):
			continue
		if mode == "folder-cycles":
			a, b = folder(a), folder(b)
			if a == b:
				continue
		graph.setdefault(a, set()).add(b)
	name = (lambda x: x) if mode == "folder-cycles" else rel
	find_cycles(graph, lambda cyc: bad.append("cycle: " + " -> ".join(name(x) for x in cyc)))
for b in bad:
	print(b)
sys.exit(1 if bad else 0)
PY
}

test_expect_success 'every src/ folder has a layer; no include goes up a layer' '
	layers layers
'
test_expect_success 'no include cycle between files of src/' '
	layers file-cycles
'
test_expect_success 'no cycle between modules (x.c with x.h) of src/, calls included' '
	layers module-cycles
'
test_expect_success 'no include cycle between folders of src/' '
	layers folder-cycles
'
test_expect_success 'nothing in src/ includes cmd/' '
	layers cmd
'
# The knobs of penny(1)'s ENVIRONMENT (every PENNY_ name) are read by the
# command, once, and handed down; the library reads none of them itself.  The
# engine reads the launcher's variables (SLURM_*, OMPI_*, HOME, ...) only in
# the command's snapshot (pn_boot_env), never with getenv, and never a knob
# there either.  knobs DIR: the offending lines.
knobs() {
	grep -rnE 'getenv\(\s*"PENNY_|pn_boot_env\([^;]*"PENNY_' "$1"
	grep -rnE '\bgetenv\(' "$1/engine"
}
test_expect_success 'src/ reads no PENNY_ knob; the engine reads no environment itself' '
	knobs "$TOP/src" >out; cat out; test ! -s out
'
test_expect_success 'the knob check names a knob read in src/ and a getenv in the engine' '
	cp -r "$TOP/src" k &&
	echo "const char *x(void) { return getenv(\"PENNY_ROOT\"); }" >>k/harness/sweep.c &&
	echo "const char *y(const char *const *e) { return pn_boot_env(e, \"PENNY_COOKIE\"); }" \
		>>k/node/topo.c &&
	echo "const char *z(void) { return getenv(\"SLURM_PROCID\"); }" >>k/engine/comm.c &&
	knobs k >out; cat out &&
	grep -q "harness/sweep.c:.*PENNY_ROOT" out && grep -q "node/topo.c:.*PENNY_COOKIE" out &&
	grep -q "engine/comm.c:.*SLURM_PROCID" out
'

# The checker itself fails, naming the edge, on a copy with bad includes.
test_expect_success 'the checker names an upward include, cycles and a cmd/ include' '
	cp -r "$TOP/src" bad &&
	echo "#include \"engine/comm.h\"" >>bad/transport/shm.c &&
	echo "#include \"transport/tcp_x.h\"" >bad/engine/x.h && : >bad/transport/tcp_x.h &&
	echo "#include \"engine/x.h\"" >>bad/transport/tcp_x.h &&
	echo "#include \"cmd/penny.h\"" >>bad/base/log.c &&
	echo "#include \"check/check_row.h\"" >>bad/harness/sweep.c &&
	echo "#include \"check/check.h\"" >>bad/check/check_node.c &&
	echo "#include \"harness/sweep.h\"" >>bad/top/record.c &&
	printf "int pn_xa(void)\n{\n\treturn pn_xb();\n}\n" >bad/base/xa.c &&
	printf "int pn_xb(void)\n{\n\treturn pn_xa();\n}\n" >bad/base/xb.c &&
	! layers layers bad >out && cat out &&
	grep -qx "src/transport/shm.c -> src/engine/comm.h (transport may use base, node, transport)" out &&
	grep -qx "src/harness/sweep.c -> src/check/check_row.h (harness may use base, engine, gpu, harness, node, plan, transport)" out &&
	grep -qx "src/check/check_node.c -> src/check/check.h (only check/check.c includes its driver)" out &&
	grep -qx "src/top/record.c -> src/harness/sweep.h (top may use base, node, top)" out &&
	! layers file-cycles bad >out && cat out &&
	grep -q "cycle: src/engine/x.h -> src/transport/tcp_x.h -> src/engine/x.h" out &&
	! layers module-cycles bad >out && cat out &&
	grep -qx "cycle: src/base/xa (calls pn_xb) -> src/base/xb (calls pn_xa) -> src/base/xa" out &&
	! layers folder-cycles bad >out && cat out &&
	grep -qx "cycle: engine -> transport -> engine" out &&
	! layers cmd bad >out && cat out &&
	grep -qx "src/base/log.c -> cmd/penny.h (src/ never includes cmd/)" out
'
test_done
