#!/usr/bin/env bash
# The tree keeps its shape: `make run` builds only what it runs, nothing
# points outside the repository, test numbers are unique, fixtures are data
# and measured results live in results/.
. "$(dirname "$0")/../lib.sh"

test_expect_success 'make run builds the binary and the plugins, no tests' '
	make -C "$TOP" -n B="$PWD/b" run >plan.txt 2>&1 &&
	grep -q -- "-o $PWD/b/penny " plan.txt &&
	grep -q "penny-nccl.so" plan.txt &&
	! grep -E "tests/(unit|helpers|fuzz|preload|plugins)|t_plugin_emu" plan.txt
'
if ! git -C "$TOP" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	test_skip "the source tree checks" "not a git checkout"
	test_done
	exit 0
fi

test_expect_success 'nothing in the repository points at a folder beside it (shared)' '
	git -C "$TOP" ls-files -z | (cd "$TOP" && xargs -0 grep -lI "\.\./shared" --) >hits 2>/dev/null;
	test ! -s hits || { cat hits; false; }
'
# The top level is the product's layout; a test's scratch files or a
# stray output committed there (it happened: ok/, pf/, out.json, p.conf)
# fail here.
test_expect_success 'the top level holds the layout and nothing else' '
	git -C "$TOP" ls-files | sed "s@/.*@/@" | sort -u >top &&
	printf "%s\n" .ci/ .dockerignore .gitignore Makefile README.md cmd/ completions/ debian/ \
		doc/ etc/ man/ plugins/ results/ src/ tests/ | sort >want &&
	comm -23 top want >extra && test ! -s extra || { cat extra; false; }
'
test_expect_success 'no two tests share a number' '
	(cd "$TOP/tests" && ls cli/t[0-9]*.sh lab/t[0-9]*.sh) | sed "s@.*/@@; s/-.*//" | sort | uniq -d >dups &&
	test ! -s dups || { cat dups; false; }
'
test_expect_success 'tests/fixtures holds data, not code' '
	git -C "$TOP" ls-files tests/fixtures |
		grep -E "\.(c|cu|cc|h|sh|py)$" >code;
	test ! -s code || { cat code; false; }
'
test_expect_success 'measured results live in results/, not under tests/' '
	git -C "$TOP" ls-files tests | grep -E "/results/" >res;
	test ! -s res || { cat res; false; }
'
# results_index TOP LIST: the files of results/ (LIST: one a line) against the
# paths the docs cite: every file is cited by doc/results.md (a path, a
# {a,b} list, a * glob, or a sub-folder ending in /; citing a whole
# DATE-MACHINE folder does not count), and every results/ path that
# README.md, doc/, tests/README.md, man/, src/ or plugins/ cite exists.
results_index() {
	python3 - "$1" "$2" <<-\PY
	import fnmatch, glob, os, re, sys
	top = sys.argv[1]
	files = [l.strip() for l in open(sys.argv[2]) if l.strip()]
	tok = re.compile(r"results/(?:\{[^}\s]*\}|[^\s`\x27\"(),{}|])*")
	def expand(p):
	    m = re.search(r"\{([^{}]*)\}", p)
	    if not m:
	        return [p]
	    return [q for alt in m.group(1).split(",") for q in expand(p[:m.start()] + alt + p[m.end():])]
	def matches(p):
	    if p.endswith("/"):
	        return [f for f in files if f.startswith(p)]
	    return [f for f in files if fnmatch.fnmatchcase(f, p) or f.startswith(p + "/")]
	def cited(path):
	    text = open(path, errors="replace").read()
	    for t in tok.findall(text):
	        t = t.rstrip(".:")
	        if not re.search(r"[$<]|YYYY|DATE|NAME|MACHINE", t) and t != "results/":
	            yield t
	bad, covered = [], set()
	os.chdir(top)
	docs = ["README.md", "tests/README.md"] + glob.glob("doc/*.md") + glob.glob("man/*") + \
	       glob.glob("src/*/*.[ch]") + glob.glob("plugins/**/*.[ch]*", recursive=True)
	for d in sorted(d for d in docs if os.path.isfile(d)):
	    for t in cited(d):
	        for p in expand(t):
	            hit = matches(p)
	            if not hit:
	                bad.append("%s cites %s: no such file in results/" % (d, p))
	            elif d == "doc/results.md" and not re.fullmatch(r"results/[^/]+/?", p):
	                covered.update(hit)
	for f in files:
	    if f not in covered:
	        bad.append("%s: not cited by doc/results.md (cite it or git rm it)" % f)
	print("\n".join(bad))
	sys.exit(1 if bad else 0)
	PY
}
test_expect_success 'doc/results.md cites every file of results/; cited results exist' '
	git -C "$TOP" ls-files results >list &&
	results_index "$TOP" list
'
test_expect_success 'the results check names an uncited file and a missing one' '
	mkdir -p r/doc r/results/2026-01-01-x/sub &&
	: >r/results/2026-01-01-x/a.txt && : >r/results/2026-01-01-x/b.tsv &&
	: >r/results/2026-01-01-x/c.csv && : >r/results/2026-01-01-x/sub/d &&
	: >r/results/2026-01-01-x/e.md &&
	printf "%s\n" "Files: \`results/2026-01-01-x/{a.txt,b.tsv}\`, results/2026-01-01-x/*.csv," \
		"\`results/2026-01-01-x/sub/\` and results/2026-01-01-x/gone.txt." \
		"    tests/bench/x.sh results/2026-01-01-x" >r/doc/results.md &&
	(cd r && find results -type f | sort) >list &&
	! results_index r list >out && cat out &&
	grep -qx "doc/results.md cites results/2026-01-01-x/gone.txt: no such file in results/" out &&
	grep -qx "results/2026-01-01-x/e.md: not cited by doc/results.md (cite it or git rm it)" out &&
	test $(wc -l <out) = 2
'
# Sizes (doc/ARCHITECTURE.md): cmd/ under 5,000 lines, no function of src/,
# cmd/ or plugins/ (C, CUDA and C++ sources) over 150 lines, no file of src/
# or plugins/ over 1,200.  What exceeds a mark
# today is listed with its size: it may shrink, not grow, and an entry that
# is within its mark fails until it is taken off the list.
# sizes TOP [LIST]: LIST (JSON) replaces the list, for the check's own test.
sizes() {
	python3 - "$1" "${2:-}" <<'PY'
import glob, json, os, re, sys
top = sys.argv[1]
known = {
	# coll-test and nccl-tests' letters (the sweep's options shared by two
	# commands), early refusals: to move out (the sweep's flow)
	"cmd/": 5083,
}
if sys.argv[2]:
	known = json.loads(sys.argv[2])
def lines(f):
	with open(f, errors="replace") as fh:
		return fh.read().split("\n")[:-1]
seen, bad = {}, []
def mark(what, n, limit):
	if what in known:
		seen[what] = n
		if n > known[what]:
			bad.append("%s: %d lines, listed at %d: it may only shrink" % (what, n, known[what]))
		elif n <= limit:
			bad.append("%s: %d lines, within %d: take it off the list" % (what, n, limit))
	elif n > limit:
		bad.append("%s: %d lines, more than %d" % (what, n, limit))
os.chdir(top)
mark("cmd/", sum(len(lines(f)) for f in glob.glob("cmd/*.[ch]")), 4999)
plugins = [f for e in ("c", "cc", "cu", "cuh") for f in glob.glob("plugins/**/*." + e, recursive=True)]
for f in sorted(glob.glob("src/*/*.c") + glob.glob("cmd/*.c") + plugins):
	ls = lines(f)
	if not f.startswith("cmd/"):
		mark(f, len(ls), 1200)
	start = None
	for i, l in enumerate(ls):
		if l == "{" and start is None:
			j = i - 1
			while j > 0 and ls[j][:1] in (" ", "\t") and ls[j - 1]:
				j -= 1
			start = j
			m = re.search(r"(\w+)\s*\(", ls[j])
			name = m.group(1) if m else "line %d" % (j + 1)
		elif l == "}" and start is not None:
			mark("%s:%s" % (f, name), i - start + 1, 150)
			start = None
for k in known:
	if k not in seen:
		bad.append("%s: listed but gone: take it off the list" % k)
for b in bad:
	print(b)
sys.exit(1 if bad else 0)
PY
}
test_expect_success 'sizes: cmd/ under 5,000 lines, functions 150, src and plugins files 1,200' '
	sizes "$TOP"
'
test_expect_success 'the size check names a long function and a listed one that is gone' '
	mkdir -p big/src/x big/cmd &&
	{ echo "int f(void)"; echo "{"; for i in $(seq 150); do echo "	;"; done; echo "}"; } \
		>big/src/x/a.c &&
	{ echo "int g(void)"; echo "{"; echo "}"; } >big/cmd/c.c &&
	mkdir -p big/plugins/y/z &&
	{ echo "template <typename T> PN_DEV void k(T a)"; echo "{"; for i in $(seq 149); do echo "	;"; done
	  echo "}"; } >big/plugins/y/k.cu &&
	seq 1201 >big/plugins/y/z/long.cc &&
	! sizes big "{\"cmd/\": 9, \"src/x/gone.c:g\": 200, \"cmd/c.c:g\": 2}" >out && cat out &&
	grep -qx "src/x/a.c:f: 153 lines, more than 150" out &&
	grep -qx "plugins/y/k.cu:k: 152 lines, more than 150" out &&
	grep -qx "plugins/y/z/long.cc: 1201 lines, more than 1200" out &&
	grep -qx "cmd/: 3 lines, within 4999: take it off the list" out &&
	grep -qx "cmd/c.c:g: 3 lines, listed at 2: it may only shrink" out &&
	grep -qx "src/x/gone.c:g: listed but gone: take it off the list" out
'

# doc/ARCHITECTURE.md names every module (.c) of src/, each under its
# folder's entry; each folder's README.md names every file of the folder;
# every file of cmd/ is a subcommand or named in the cmd/ entry.
test_expect_success 'the architecture and the folder READMEs name every file' '
	python3 - "$TOP" <<-\PY
	import glob, os, re, subprocess, sys
	os.chdir(sys.argv[1])
	arch = open("doc/ARCHITECTURE.md").read()
	a = arch.index("```")
	block = arch[a:arch.index("```", a + 3)]
	entry, cur = {}, None
	for line in block.split("\n"):
	    m = re.match(r"^(\S+/)\s", line)
	    if m:
	        cur = m.group(1)
	        entry[cur] = line
	    elif cur:
	        entry[cur] += " " + line
	def named(word, text):
	    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text)
	bad = []
	for d in sorted(glob.glob("src/*/")):
	    readme = open(d + "README.md").read()
	    for f in sorted(glob.glob(d + "*.[ch]")):
	        stem = os.path.splitext(os.path.basename(f))[0]
	        if not named(stem, readme):
	            bad.append("%sREADME.md does not name %s" % (d, stem))
	        if f.endswith(".c") and not named(stem, entry.get(d, "")):
	            bad.append("doc/ARCHITECTURE.md: %s does not name %s" % (d, stem))
	tops = subprocess.run(["git", "ls-files"], capture_output=True, text=True).stdout.split("\n")
	folders = {l.split("/")[0] + "/" for l in tops if "/" in l}
	for d in sorted(folders):
	    if not re.search(r"(?<![\w./-])" + re.escape(d), block):
	        bad.append("doc/ARCHITECTURE.md: the folder list does not name %s" % d)
	for d in sorted(glob.glob("plugins/*/")):
	    if not named(os.path.basename(d.rstrip("/")) + "/", entry.get("plugins/", "")) and \
	       not named(os.path.basename(d.rstrip("/")), entry.get("plugins/", "")):
	        bad.append("doc/ARCHITECTURE.md: plugins/ does not name %s" % d)
	subs = open("cmd/penny.c").read()
	for f in sorted(glob.glob("cmd/*.c")):
	    stem = os.path.basename(f)[:-2]
	    if not named(stem + ".c", entry.get("cmd/", "")) and \
	       not re.search(r"\{\s*\"%s\"," % re.escape(stem), subs):
	        bad.append("doc/ARCHITECTURE.md: cmd/ does not name %s.c (not a subcommand)" % stem)
	print("\n".join(bad))
	sys.exit(1 if bad else 0)
	PY
'
test_done
