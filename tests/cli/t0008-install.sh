#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make install and install-strip into a DESTDIR, after the build this suite
# runs on (the GNU order: make, then make install PREFIX=...):
#  - install builds only what it installs (no tests, fuzz replays or test
#    plugins);
#  - the installed binary searches the PLUGINDIR of the install (it follows
#    PREFIX given only at install time), then its own ../lib/penny, never the
#    build tree, and finds its plugins there;
#  - install-strip strips the binary and the plugins and keeps their debug
#    info apart under DEBUGDIR, linked by .gnu_debuglink;
#  - uninstall removes what install put there.
. "$(dirname "$0")/../lib.sh"

# This suite's build directory, relative to the tree when inside it.  Under
# make test the build's own variables (OPT, SAN of make asan) come along in
# MAKEFLAGS.  The installed binary is built here (INST), not in the build
# directory, where another test file installs at the same time.
b=$BUILD
case $b in "$TOP"/*) b=${b#"$TOP"/} ;; esac
mk() { make -C "$TOP" --no-print-directory B="$b" INST="$TRASH/inst" "$@" >make.log 2>&1 ||
	{ tail -20 make.log; return 1; }; }

test_expect_success 'install builds the binary and the plugins, no tests' '
	make -C "$TOP" -n B="$PWD/b" install DESTDIR="$PWD/d" >plan.txt 2>&1 &&
	grep -q -- "-o $PWD/b/inst/penny " plan.txt &&
	grep -q "penny-nccl.so" plan.txt &&
	! grep -E "tests/(unit|helpers|fuzz|preload|plugins)|t_plugin_emu|-o $PWD/b/penny " plan.txt
'

# searched DIR: the plugin directories an installed binary reports
searched() {
	test_exit 2 "$1" allreduce-test --np 2 --backend nosuch 2>err &&
		sed -n "s/.*is not installed: searched //p" err
}

test_expect_success 'make; make install PREFIX=/usr: the plugin dir follows PREFIX' '
	mk install DESTDIR="$PWD/r" PREFIX=/usr &&
	{ ! grep -E "(^|/)nvcc " make.log || { echo "install rebuilt the GPU kernels"; exit 1; }; } &&
	test -x r/usr/bin/penny && test -f r/usr/lib/penny/penny-nccl.so &&
	test -f r/usr/lib/penny/libpenny-nccl.so && test -f r/usr/share/man/man7/penny-nccl.7 &&
	echo "PENNY_PLUGIN_PATH (unset), /usr/lib/penny, $PWD/r/usr/bin/../lib/penny" >want &&
	searched r/usr/bin/penny >got && test_cmp want got &&
	for f in penny.1 penny-check.1 penny-topo.1; do test -f r/usr/share/man/man1/$f || exit 1; done &&
	test -f r/usr/share/bash-completion/completions/penny &&
	test -f r/usr/share/zsh/site-functions/_penny &&
	test -f r/usr/share/doc/penny/examples/dgx-h100.conf
'
# make install-list (what penny(1)'s FILES is checked against, t0002) says
# what install installs: every installed file is on it, and every file on it
# is installed but the plugins this build could not make (no nvcc, NVSHMEM).
test_expect_success 'make install-list lists what make install installed' '
	(cd r && find . -type f | sed "s@^\\.@@" | sort) >installed &&
	make -s -C "$TOP" --no-print-directory install-list PREFIX=/usr | sort >listed &&
	comm -23 installed listed >extra && test_cmp /dev/null extra &&
	comm -13 installed listed | grep -vx -e /usr/lib/penny/penny-cuda.so \
		-e /usr/lib/penny/penny-nvshmem.so >missing;
	test_cmp /dev/null missing
'
test_expect_success 'the installed binary finds its plugins beside it (../lib/penny)' '
	r/usr/bin/penny allreduce-test --np 2 --backend nccl -b 1K -e 1K -n 1 >out 2>err;
	! grep -q "is not installed" err &&
	{ grep -q "nccl plugin" err || grep -q nccl out; }
'
test_expect_success 'a second install with another PREFIX rebuilds for it' '
	mk install DESTDIR="$PWD/o" PREFIX=/opt/penny &&
	echo "PENNY_PLUGIN_PATH (unset), /opt/penny/lib/penny, $PWD/o/opt/penny/bin/../lib/penny" >want &&
	searched o/opt/penny/bin/penny >got && test_cmp want got
'

# sections FILE: the ELF section names of FILE
sections() { readelf -SW "$1" | sed -n "s/^ *\[ *[0-9]*\] \([^ ]*\) .*/\1/p"; }
if ! command -v readelf >/dev/null || ! command -v objcopy >/dev/null; then
	test_skip "install-strip" "no readelf or objcopy (binutils)"
else
	test_expect_success 'install-strip: stripped, the debug info kept apart and linked' '
		mk install-strip DESTDIR="$PWD/s" PREFIX=/usr &&
		for f in usr/bin/penny usr/lib/penny/penny-nccl.so; do
			sections s/$f >sec && ! grep -qx ".debug_info" sec && ! grep -qx ".symtab" sec &&
			grep -qx ".gnu_debuglink" sec &&
			sections s/usr/lib/debug/$f.debug | grep -qx ".debug_info" &&
			readelf -p .gnu_debuglink s/$f | grep -q "${f##*/}.debug" || { echo "$f"; exit 1; }
		done &&
		s/usr/bin/penny --version | grep -q "^penny "
	'
	test_expect_success 'uninstall removes what install-strip put there' '
		mk uninstall DESTDIR="$PWD/s" PREFIX=/usr &&
		find s -type f >left && test_cmp /dev/null left
	'
fi
test_done
