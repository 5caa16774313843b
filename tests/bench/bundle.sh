#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Put a build of penny where a GPU machine without the build packages can
# run it: the binary, its plugins (and the kernel-check helper when built),
# and the shared libraries such a machine is likely to lack (RDMA, hwloc,
# netlink) in one directory, with an env.sh that points LD_LIBRARY_PATH and
# PENNY_PLUGIN_PATH at them.  The GPU benches take that directory as B.
#   make CUDA_ARCHS=90 && make CUDA_ARCHS=90 kernel-check   (on the build machine)
#   tests/bench/bundle.sh [DIR]                             (default: build-gpu)
#   . DIR/env.sh; DIR/penny topo                            (on the GPU machine)
# DIR is relative to the current directory; the default is the checkout's.
# Environment: BUILD (build directory, default the checkout's build), PENNY
# (the binary, default the checkout's penny), LIBS (library names to carry, default below; the rest
# of what penny links, libc to libxml2, every distribution has).
# Exit status: 0, 1 when something to carry is missing, 2 on bad usage.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -le 1 ] || { echo "usage: tests/bench/bundle.sh [DIR]" >&2; exit 2; }
dir=${1:-$top/build-gpu}
BUILD=${BUILD:-$top/build}
PENNY=${PENNY:-$top/penny}
LIBS=${LIBS:-libibverbs libibumad libibmad libhwloc libnl-3 libnl-route-3}
die() { echo "bundle.sh: $*" >&2; exit 1; }

[ -x "$PENNY" ] || die "no $PENNY: run make first"
plugins=("$BUILD"/plugins/*.so)
[ -e "${plugins[0]}" ] || die "no plugins in $BUILD/plugins: run make first"
if [ -e "$dir" ] && [ ! -d "$dir" ]; then die "'$dir' exists and is not a directory"; fi
mkdir -p "$dir/lib" "$dir/plugins" || die "cannot create '$dir'"

# the resolved paths of the named libraries, from the binary's own links
deps=$(ldd "$PENNY") || die "ldd $PENNY failed"
for l in $LIBS; do
	p=$(awk -v l="$l" 'index($1, l ".so") == 1 && $3 ~ /^\// {print $3; exit}' <<<"$deps")
	[ -n "$p" ] || die "$PENNY does not link $l (LIBS names what to carry)"
	so=$(awk -v l="$l" 'index($1, l ".so") == 1 {print $1; exit}' <<<"$deps")
	cp -L "$p" "$dir/lib/$so" || die "cannot copy $p"
done
cp "$PENNY" "$dir/penny" || die "cannot copy $PENNY"
rm -f "$dir"/plugins/*.so
cp "${plugins[@]}" "$dir/plugins/" || die "cannot copy the plugins"
if [ -x "$BUILD/tests/helpers/kernel-check" ]; then
	mkdir -p "$dir/dbg" && cp "$BUILD/tests/helpers/kernel-check" "$dir/dbg/" ||
		die "cannot copy kernel-check"
fi
cat >"$dir/env.sh" <<'EOF'
# . this file: penny, its plugins and the libraries carried beside it
_b=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH=$_b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PENNY_PLUGIN_PATH=$_b/plugins
unset _b
EOF
echo "bundle.sh: $dir: penny $("$PENNY" --version | awk '{print $2}'), $(ls "$dir/plugins" | tr '\n' ' ')lib: $(ls "$dir/lib" | tr '\n' ' ')($(du -sh "$dir" | cut -f1))"
