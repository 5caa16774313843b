#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian packages (debian/, make deb): the version of debian/changelog is
# penny's; make deb builds penny, penny-plugins-gpu and their -dbgsym from a
# copy of the tree and leaves the tree as it was; the packages hold what they
# should and nothing else, lintian has nothing to say at its default level,
# the unpacked binary runs topo and check --quick on a synthetic node with
# the plugins of its package, and so does the installed one: dpkg -i (the
# user penny, /var/lib/penny root:penny 0775, the Slurm check in libexec),
# dpkg -r (the units an operator enabled are disabled) and dpkg -P
# (/var/lib/penny goes) in a throw-away overlay of this machine's root (where root may mount one;
# skipped otherwise).  The build (about a minute) needs
# debhelper (make setup-deb); without it the build tests are skipped.  It is
# built without the cuda plugin (NVCC=) and unoptimised (DEB_BUILD_OPTIONS=noopt:
# 53 CPU s against 127 with -O2) to keep it short.
# cost: 70
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"

version=$(sed -n 's/^#define PENNY_VERSION "\(.*\)"$/\1/p' "$TOP/cmd/penny.h")
test_expect_success 'debian/changelog has the version of penny --version' '
	test -n "$version" &&
	head -1 "$TOP/debian/changelog" | grep -q "^penny ($version) " &&
	penny --version | grep -qx "penny $version"
'
if ! command -v dpkg-buildpackage >/dev/null || ! command -v dh >/dev/null; then
	test_skip "make deb and the packages" "no dpkg-buildpackage or debhelper (make setup-deb)"
	test_done
	exit 0
fi

git_state() { git -C "$TOP" status --porcelain --ignored=matching -- . ':!build*' ':!penny' 2>/dev/null; }
git_state >before
test_expect_success 'make deb builds the four packages, the tree untouched' '
	DEB_BUILD_OPTIONS="noopt${DEB_BUILD_OPTIONS:+ $DEB_BUILD_OPTIONS}" \
		make -C "$TOP" --no-print-directory deb DEBDIR="$PWD/deb" NVCC= >deb.log 2>&1 ||
		{ tail -30 deb.log; exit 1; }
	for p in penny penny-plugins-gpu penny-dbgsym penny-plugins-gpu-dbgsym; do
		test -f deb/${p}_${version}_*.deb || { echo "no $p"; ls deb; exit 1; }
	done &&
	test ! -e deb/penny && git_state >after && test_cmp before after
'
deb() { echo deb/$1_${version}_*.deb; }
contents() { dpkg-deb -c $(deb "$1") | awk "{print \$6}" | grep -v "/$" | sed "s@^\./@/@" | sort; }

test_expect_success 'penny holds the binary, man pages, completions, examples and the Slurm check' '
	{
		echo /usr/bin/penny
		echo /usr/share/bash-completion/completions/penny
		echo /usr/share/doc/penny/changelog.gz
		echo /usr/share/doc/penny/copyright
		for f in "$TOP"/etc/check/*.conf "$TOP"/etc/container/* \
			"$TOP"/etc/kubernetes/*; do echo /usr/share/doc/penny/examples/${f##*/}; done
		echo /usr/libexec/penny/penny-slurm-check
		echo /usr/lib/sysusers.d/penny.conf
		echo /usr/lib/tmpfiles.d/penny.conf
		echo /etc/default/penny
		for f in penny-check.service penny-check.timer penny-top.service; do
			echo /lib/systemd/system/$f
		done
		for f in "$TOP"/man/*.1; do echo /usr/share/man/man1/${f##*/}.gz; done
		echo /usr/share/zsh/vendor-completions/_penny
	} | sort >want &&
	contents penny >got && test_cmp want got
'
test_expect_success 'penny-plugins-gpu holds the nccl plugin, the interposer and its page' '
	contents penny-plugins-gpu | grep "^/usr/lib/\|/man7/" >got &&
	printf "%s\n" /usr/lib/penny/libpenny-nccl.so /usr/lib/penny/penny-nccl.so \
		/usr/share/man/man7/penny-nccl.7.gz >want && test_cmp want got &&
	dpkg-deb -f $(deb penny-plugins-gpu) Depends | grep -q "penny (= $version)"
'
test_expect_success 'penny-plugins-gpu'"'"'s description states the GPU architectures of the plugins' '
	dpkg-deb -f $(deb penny-plugins-gpu) Description >desc && cat desc &&
	for a in $(make -s -C "$TOP" --no-print-directory -f Makefile -f - print-archs <<-\MK
		print-archs: ; @echo $(CUDA_ARCHS_DEFAULT)
		MK
	); do grep -q "sm_$a" desc || { echo "sm_$a not stated"; exit 1; }; done && grep -q PTX desc
'
test_expect_success 'the binaries are stripped; the debug info is in -dbgsym by build-id' '
	mkdir x && dpkg-deb -x $(deb penny) x && dpkg-deb -x $(deb penny-plugins-gpu) x &&
	dpkg-deb -x $(deb penny-dbgsym) x && dpkg-deb -x $(deb penny-plugins-gpu-dbgsym) x &&
	for f in x/usr/bin/penny x/usr/lib/penny/penny-nccl.so; do
		! readelf -SW $f | grep -q " .debug_info " || { echo "$f not stripped"; exit 1; }
		id=$(readelf -n $f | sed -n "s/.*Build ID: //p") && test -n "$id" &&
		readelf -SW x/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug | grep -q " .debug_info " ||
			{ echo "$f: no debug info for build-id $id"; exit 1; }
	done
'
if command -v lintian >/dev/null; then
	test_expect_success 'lintian: nothing at its default level' '
		lintian --fail-on error,warning deb/penny_${version}_*.changes >lint 2>&1;
		rc=$?; grep -v "running with root privileges" lint >lint.out; cat lint.out;
		test $rc -eq 0 && test ! -s lint.out
	'
else
	test_skip "lintian" "lintian is not installed (make setup-deb)"
fi

tree_ports node >/dev/null
test_expect_success 'the unpacked penny: topo as the tree binary, its plugin dir' '
	x/usr/bin/penny topo --sysfs-root node >out.txt &&
	test_cmp "$TOP/tests/fixtures/topo/sysfs-ports.txt" out.txt &&
	test_exit 2 x/usr/bin/penny allreduce-test --np 2 --backend nosuch 2>err &&
	grep -q "searched PENNY_PLUGIN_PATH (unset), /usr/lib/penny, $PWD/x/usr/bin/../lib/penny$" err
'
test_expect_success 'the unpacked penny: check --quick runs, its nccl plugin found' '
	x/usr/bin/penny check --quick --sysfs-root node --json >out.json;
	rc=$? && test $rc -le 1 && json_valid out.json &&
	x/usr/bin/penny allreduce-test --np 2 --backend nccl -b 1K -e 1K -n 1 >out 2>err;
	! grep -q "is not installed" err && grep -q "nccl" err out
'

# dpkg -i on this machine, in a throw-away root: an overlay of / (changes in
# a tmpfs) in a private mount namespace, which dies with the command.  Its
# man-db trigger is off there (Debian's switch, /var/lib/man-db/auto-update):
# rebuilding the whole manual database on dpkg -i and -r cost 7 of its 10
# CPU seconds; man -w finds the page without it.
in_overlay() {
	timeout 120 unshare -m --propagation private sh -c '
		set -e
		o=$1; shift
		mount -t tmpfs tmpfs "$o" && mkdir "$o/u" "$o/w" "$o/m"
		mount -t overlay overlay -o lowerdir=/,upperdir="$o/u",workdir="$o/w" "$o/m"
		for d in proc sys dev; do mount --rbind /$d "$o/m/$d"; done
		mkdir "$o/m/penny-test" && cp -a debs node "$o/m/penny-test/"
		chroot "$o/m" sh -c "cd /penny-test && $*"' sh "$PWD/ov" "$@"
}
mkdir ov debs && cp $(deb penny) $(deb penny-plugins-gpu) debs/
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null || ! in_overlay true >ov.log 2>&1; then
	test_skip "dpkg -i, topo, check --quick, dpkg -r in a throw-away root" \
		"no overlay of / here (needs root, unshare and overlayfs): $(tail -1 ov.log 2>/dev/null)"
else
	test_expect_success 'dpkg -i, topo, check --quick, dpkg -r in a throw-away root' '
		in_overlay "rm -f /var/lib/man-db/auto-update && dpkg -i debs/*.deb >/dev/null &&
			test \"\$(command -v penny)\" = /usr/bin/penny &&
			penny topo --sysfs-root node >topo.txt &&
			{ penny check --quick --sysfs-root node >check.txt; test \$? -le 1; } &&
			grep -qE \"^[0-9]+ passed, [0-9]+ failed\" check.txt &&
			{ penny allreduce-test --np 2 --backend nccl -b 1K -e 1K -n 1 2>&1 | grep nccl >nccl.txt || true; } &&
			! grep -q \"is not installed\" nccl.txt && test -s nccl.txt &&
			man -w penny-check >/dev/null &&
			systemd-analyze verify /lib/systemd/system/penny-check.service \
				/lib/systemd/system/penny-check.timer /lib/systemd/system/penny-top.service &&
			grep -q ^ExecStart=/usr/bin/penny /lib/systemd/system/penny-top.service &&
			test ! -e /etc/systemd/system/timers.target.wants/penny-check.timer &&
			getent passwd penny >/dev/null && test \"\$(stat -c %U:%G:%a /var/lib/penny)\" = root:penny:775 &&
			test -x /usr/libexec/penny/penny-slurm-check &&
			grep -qx \"PENNY=\\\${PENNY:-/usr/bin/penny}\" /usr/libexec/penny/penny-slurm-check &&
			systemctl enable penny-check.timer penny-top.service 2>/dev/null &&
			test -e /etc/systemd/system/timers.target.wants/penny-check.timer &&
			echo x >/var/lib/penny/penny-check.prom &&
			cat topo.txt && dpkg -r penny-plugins-gpu penny >/dev/null &&
			test ! -e /usr/bin/penny && test ! -e /usr/lib/penny &&
			test ! -e /etc/systemd/system/timers.target.wants/penny-check.timer &&
			test ! -e /etc/systemd/system/multi-user.target.wants/penny-top.service &&
			test -e /var/lib/penny/penny-check.prom && dpkg -P penny >/dev/null &&
			test ! -e /var/lib/penny" >out 2>&1 ||
			{ cat out; exit 1; }
		grep -v "^Processing triggers\|^Not building database" out >topo.txt &&
		test_cmp "$TOP/tests/fixtures/topo/sysfs-ports.txt" topo.txt
	'
fi
test_done
