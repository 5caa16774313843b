#!/usr/bin/env bash
# What tests/bench/gpu-allreduce.sh builds on a GPU machine must build there
# from a fresh checkout: those machines have a compiler, make and nvcc but
# none of the RDMA, hwloc, curses or libxml2 development packages, so
# pkg-config answers nothing and no feature macro comes from it.
#  - every header under src/ compiles on its own with -std=c11 and no
#    pkg-config flags (it includes what it uses), except the one that wraps
#    libxml2;
#  - every C file compiles without pkg-config's feature macros (ncursesw's
#    -D_DEFAULT_SOURCE -D_XOPEN_SOURCE=600 hid a missing _GNU_SOURCE in
#    the fake libcuda, and tests/bench/nvshmem-allreduce.sh's `make plugins`
#    failed on the GPU machines);
#  - the bench driver, the nccl plugin and the NCCL interposer (which
#    tests/bench/torch-allreduce.sh builds) build with PKG_CONFIG=false,
#    with gcc and with clang;
#  - tests/bench/bundle.sh carries a build there: the binary runs from its
#    directory with the RDMA, hwloc and netlink libraries beside it.
# cost: 22
. "$(dirname "$0")/../lib.sh"

# Headers that include an external library's header by design.
external='src/base/xml.h'

headers_alone() {
	local cc=$1 h bad=0
	for h in "$TOP"/src/*/*.h; do
		case " $external " in *" ${h#"$TOP"/} "*) continue ;; esac
		printf '#include "%s"\n' "${h#"$TOP"/src/}" >hdr.c
		if ! "$cc" -std=c11 -Wall -Wextra -Werror -I"$TOP"/src -I"$TOP"/plugins/include \
			-fsyntax-only hdr.c 2>err; then
			echo "${h#"$TOP"/}: does not compile alone:"
			head -3 err
			bad=1
		fi
	done
	return $bad
}

sources_alone() {
	local cc=$1 f bad=0 inc
	inc=$(pkg-config --cflags-only-I libibverbs hwloc libxml-2.0 2>/dev/null)
	for f in "$TOP"/src/*/*.c "$TOP"/cmd/*.c "$TOP"/plugins/*/*.c "$TOP"/tests/plugins/fake/*.c \
		"$TOP"/tests/helpers/*.c "$TOP"/tests/unit/*.c; do
		# shellcheck disable=SC2086
		"$cc" -std=c11 -Werror=implicit-function-declaration -I"$TOP"/src -I"$TOP"/plugins/include \
			$inc -DPENNY_PLUGINDIR='""' -fsyntax-only "$f" 2>err
		if grep -q "implicit declaration\|undeclared" err; then
			echo "${f#"$TOP"/}: needs a feature macro it does not define:"
			grep -m2 "implicit declaration\|undeclared" err
			bad=1
		fi
	done
	return $bad
}

bench_build() {
	local cc=$1
	make -C "$TOP" --no-print-directory -s B="$TRASH/b-$cc" CC="$cc" PKG_CONFIG=false NVCC= \
		"$TRASH/b-$cc/tests/helpers/penny-gpu-driver" "$TRASH/b-$cc/plugins/penny-nccl.so" \
		"$TRASH/b-$cc/plugins/libpenny-nccl.so" >build.log 2>&1 || { tail -20 build.log; return 1; }
	test -x "$TRASH/b-$cc/tests/helpers/penny-gpu-driver" &&
		test -f "$TRASH/b-$cc/plugins/penny-nccl.so" &&
		test -f "$TRASH/b-$cc/plugins/libpenny-nccl.so" &&
		# it is the driver, and it runs: a bad option is its usage error
		test_exit 2 "$TRASH/b-$cc/tests/helpers/penny-gpu-driver" --no-such-option
}

for cc in gcc clang; do
	if ! command -v $cc >/dev/null; then
		test_skip "headers alone ($cc)" "no $cc"
		test_skip "sources alone ($cc)" "no $cc"
		test_skip "bench driver without pkg-config ($cc)" "no $cc"
		continue
	fi
	test_expect_success "every src header compiles alone, no pkg-config flags ($cc)" \
		"headers_alone $cc"
	test_expect_success "every C file compiles without pkg-config's feature macros ($cc)" \
		"sources_alone $cc"
	test_expect_success "bench driver and nccl plugin build without pkg-config ($cc)" \
		"bench_build $cc"
done
test_expect_success 'bench/bundle.sh: penny, its plugins and the libraries it carries run from one directory' '
	bash "$TOP/tests/bench/bundle.sh" "$TRASH/bundle" >out && cat out &&
	test -x bundle/penny && test -f bundle/plugins/penny-nccl.so &&
	(
		. bundle/env.sh &&
		test "$PENNY_PLUGIN_PATH" = "$TRASH/bundle/plugins" &&
		for l in libibverbs.so libibumad.so libibmad.so libhwloc.so libnl-3.so libnl-route-3.so; do
			ldd bundle/penny | grep -q "$l.* => $TRASH/bundle/lib/" || { echo "$l not carried"; exit 1; }
		done &&
		bundle/penny --version | grep -q "^penny "
	) &&
	test_exit 2 bash "$TOP/tests/bench/bundle.sh" a b 2>err && grep -q usage err &&
	: >file && test_exit 1 bash "$TOP/tests/bench/bundle.sh" file 2>err &&
	grep -q "is not a directory" err &&
	LIBS=libnosuch test_exit 1 bash "$TOP/tests/bench/bundle.sh" "$TRASH/b2" 2>err &&
	grep -q "does not link libnosuch" err
'
test_done
