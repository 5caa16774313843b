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
test_expect_success 'every man page is valid roff' '
	for p in "$TOP"/man/*.1; do
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>warn >/dev/null || exit 1
		if [ -s warn ]; then cat warn; exit 1; fi
	done
'
test_done
