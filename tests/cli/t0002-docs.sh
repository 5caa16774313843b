#!/usr/bin/env bash
# --help, man pages and completions come from one option table per command:
# every option in a table is in the man page, every option in a man page is
# in the table, and the completion scripts list what the tables say.
. "$(dirname "$0")/../lib.sh"

man_opts() { grep -oE '\\-\\-[A-Za-z0-9]([A-Za-z0-9_-]|\\-)*' "$1" | sed 's/\\//g' | sort -u; }
table_opts() { penny __complete "$1" | cut -f1 | sort -u; }
common_opts() { penny __complete allreduce-test | cut -f1 | sort -u >all_ar
	printf -- '--json\n--debug\n--sysfs-root\n--help\n'; }

test_expect_success 'penny(1) documents every command and the common options' '
	sed "s/\\\\//g" "$TOP/man/penny.1" >plain &&
	for c in $(penny __complete); do
		[ "$c" = help ] && continue
		grep -q -- "$c" plain || { echo "penny.1 lacks $c"; exit 1; }
	done &&
	for o in --json --debug --sysfs-root --help --version --np --rank --nranks --root --timeout --transport; do
		grep -q -- "$o" plain || { echo "penny.1 lacks $o"; exit 1; }
	done
'
for c in $(penny __complete); do
	[ "$c" = help ] && continue
	page=$TOP/man/penny-$c.1
	if [ ! -f "$page" ]; then
		test_expect_success "man page for $c exists" 'false'
		continue
	fi
	test_expect_success "penny-$c.1 and the option table agree" '
		table_opts '"$c"' >table &&
		man_opts '"$page"' >man &&
		grep -vxF -e --json -e --debug -e --sysfs-root -e --help table >table.own &&
		missing=$(comm -23 table.own man) && extra=$(comm -13 table man) &&
		if [ -n "$missing$extra" ]; then
			echo "in table, not in man page: $missing"; echo "in man page, not in table: $extra"; exit 1
		fi
	'
done
# The man entry (.TP paragraph) of every option whose table has a range
# states it as --help prints it ("1..16"), in the command's page or, for
# the launch and common options, in penny(1).
cat >ranges.py <<'PY'
import re, subprocess, sys
penny, top, cmd = sys.argv[1:4]
def entries(path):
    text = open(path).read()
    plain = re.sub(r"\\f[BIRP]", "", text).replace("\\-", "-").replace("\\", "")
    out, cur = [], None
    for line in plain.split("\n"):
        if line.startswith((".TP", ".SH", ".SS", ".PP")):
            cur = [] if line.startswith(".TP") else None
            if cur is not None:
                out.append(cur)
        elif cur is not None:
            cur.append(line)
    return out
def entry(blocks, opt):
    for b in blocks:
        if b and re.search(re.escape(opt) + r"(?![A-Za-z0-9_-])", b[0]):
            return " ".join(b)
    return None
own, common = entries(f"{top}/man/penny-{cmd}.1"), entries(f"{top}/man/penny.1")
bad = 0
for line in subprocess.run([penny, "__complete", cmd], capture_output=True, text=True).stdout.splitlines():
    lng, short, arg, rng = line.split("\t")[:4]
    if rng in ("-", "unchecked"):
        continue
    text = entry(own, lng) or entry(common, lng)
    if text is None or rng not in text:
        print(f"{cmd} {lng}: man entry does not state the range {rng}: {text!r}")
        bad = 1
sys.exit(bad)
PY
for c in $(penny __complete); do
	[ "$c" = help ] || [ ! -f "$TOP/man/penny-$c.1" ] && continue
	test_expect_success "penny-$c.1 states the range of every ranged option" '
		python3 ranges.py "$PENNY" "$TOP" '"$c"'
	'
done
test_expect_success 'every numeric option has a range in its table' '
	for c in $(penny __complete); do
		[ "$c" = help ] && continue
		penny __complete $c | awk -F "\t" -v c=$c "\$4 == \"unchecked\" { print c, \$1; bad = 1 }
			END { exit bad }" || exit 1
	done
'
test_expect_success 'bash completion completes commands and options from the tables' '
	PATH=$(dirname "$PENNY"):$PATH bash -c "
		. \"$TOP/completions/penny.bash\"
		COMP_WORDS=(penny all); COMP_CWORD=1; _penny
		[ \"\${COMPREPLY[*]}\" = allreduce-test ] || { echo \"got: \${COMPREPLY[*]}\"; exit 1; }
		COMP_WORDS=(penny allreduce-test --tim); COMP_CWORD=2; _penny
		[ \"\${COMPREPLY[*]}\" = --timeout ] || { echo \"got: \${COMPREPLY[*]}\"; exit 1; }
		COMP_WORDS=(penny allreduce-test --transport \"\"); COMP_CWORD=3; _penny
		[ \"\${COMPREPLY[*]}\" = \"shm tcp verbs\" ] || { echo \"got: \${COMPREPLY[*]}\"; exit 1; }
	"
'
test_expect_success 'zsh completion script is syntactically valid' '
	if command -v zsh >/dev/null; then zsh -n "$TOP/completions/_penny"; else
		grep -q "penny __complete" "$TOP/completions/_penny"; fi
'
# The knobs: every PENNY_ variable the code reads (getenv or a plugin's
# env_* helper, in cmd/, src/ and plugins/; the test plugins are under
# tests/) is a row of README.md's environment table, and every row names a
# knob that is read.  A row may shorten "PENNY_CUDA_TILE, _RING_TILE" after its first name.
# knobs_check TOP: prints each difference, exits 1 on one.
knobs_check() {
	python3 - "$1" <<-\PY
	import glob, os, re, sys
	os.chdir(sys.argv[1])
	read = {}
	call = re.compile(r"\b(?:getenv|secure_getenv|env_\w+)\s*\(\s*\"(PENNY_[A-Z0-9_]+)\"")
	srcs = glob.glob("cmd/*.[ch]") + glob.glob("src/**/*.[ch]", recursive=True) + \
	       glob.glob("plugins/**/*.[ch]", recursive=True) + glob.glob("plugins/**/*.c[cu]", recursive=True)
	for f in sorted(srcs):
	    for k in call.findall(open(f, errors="replace").read()):
	        read.setdefault(k, f)
	readme = open("README.md").read()
	table = readme[readme.index("## Environment"):]
	table = table[:table.index("\n## ")]
	listed = set()
	for row in re.findall(r"^\| *(`[^|]*)\|", table, re.M):
	    names = re.findall(r"`([A-Z_][A-Z0-9_]*)`", row)
	    first = names[0] if names else ""
	    prefix = "_".join(first.split("_")[:2])
	    for n in names:
	        listed.add(prefix + n if n.startswith("_") else n)
	bad = ["%s: read by %s, not in README.md's environment table" % (k, f) for k, f in sorted(read.items())
	       if k not in listed]
	bad += ["%s: in README.md's environment table, read by nothing" % k for k in sorted(listed)
	        if k.startswith("PENNY_") and k not in read]
	print("\n".join(bad))
	sys.exit(1 if bad else 0)
	PY
}
test_expect_success 'README.md lists every PENNY_ knob the code reads, and no other' '
	knobs_check "$TOP"
'
test_expect_success 'the knob check names a knob missing from README.md and a stale row' '
	mkdir -p k/cmd k/plugins/x && sed "s/PENNY_BIND/PENNY_X_PLUGIN/" "$TOP/README.md" >k/README.md &&
	echo "const char *a = getenv(\"PENNY_ONLY_IN_CODE\");" >k/cmd/a.c &&
	echo "static int b = env_u64(\"PENNY_X_PLUGIN\", 1);" >k/plugins/x/b.c &&
	! knobs_check k >out && cat out &&
	grep -qx "PENNY_ONLY_IN_CODE: read by cmd/a.c, not in README.md.s environment table" out &&
	grep -qx "PENNY_DEBUG: in README.md.s environment table, read by nothing" out &&
	! grep -q PENNY_X_PLUGIN out
'
# penny(1)'s FILES against what make install installs in the Debian
# package's layout (debian/rules' PENNY_DIRS): every installed file but the
# binary and the man pages is named there (a path, or a * glob), and every
# path named there is installed.  debian/control names every plugin.
files_check() {
	python3 - "$1" "$2" <<-\PY
	import fnmatch, re, sys
	man, listfile = sys.argv[1:3]
	inst = [l.strip() for l in open(listfile) if l.strip()]
	text = open(man).read()
	sec = text[text.index(".SH FILES"):]
	sec = sec[:sec.index("\n.SH", 1)]
	named = []
	for line in re.findall(r"^\.I (.*)$", sec, re.M):
	    named += [p.strip() for p in line.replace("\\-", "-").split(",")]
	bad = ["FILES names %s, which make install does not install" % p for p in named
	       if not any(fnmatch.fnmatchcase(f, p) for f in inst)]
	bad += ["make install installs %s, which FILES does not name" % f for f in inst
	        if not re.search(r"/bin/penny$|/man[17]/", f) and not any(fnmatch.fnmatchcase(f, p) for p in named)]
	print("\n".join(bad))
	sys.exit(1 if bad else 0)
	PY
}
dirs=$(sed -n '/^PENNY_DIRS/,/[^\\]$/p' "$TOP/debian/rules" | sed 's/^PENNY_DIRS = //; s/\\$//' | tr '\n\t' '  ')
test_expect_success 'penny(1) FILES names what make install installs, in the package layout' '
	test -n "$dirs" &&
	make -s -C "$TOP" --no-print-directory install-list $dirs >list &&
	grep -qx /usr/lib/penny/penny-nvshmem.so list &&
	files_check "$TOP/man/penny.1" list
'
test_expect_success 'the FILES check names an installed file it lacks and a path not installed' '
	make -s -C "$TOP" --no-print-directory install-list $dirs >list &&
	sed "/^\\.I .*libpenny\\\\-nccl/s@.*@.I /usr/lib/penny/gone.so@" "$TOP/man/penny.1" >p.1 &&
	! files_check p.1 list >out && cat out &&
	grep -qx "FILES names /usr/lib/penny/gone.so, which make install does not install" out &&
	grep -qx "make install installs /usr/lib/penny/libpenny-nccl.so, which FILES does not name" out
'
test_expect_success 'debian/control names every plugin of the GPU package' '
	make -s -C "$TOP" --no-print-directory install-list $dirs | sed -n "s@^/usr/lib/penny/@@p" >plugins &&
	test -s plugins &&
	for p in $(cat plugins); do grep -q "$p" "$TOP/debian/control" || { echo "debian/control lacks $p"; exit 1; }; done
'
test_expect_success 'every man page is valid roff' '
	for p in "$TOP"/man/*.1; do
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>warn >/dev/null || exit 1
		if [ -s warn ]; then cat warn; exit 1; fi
	done
'
test_done
