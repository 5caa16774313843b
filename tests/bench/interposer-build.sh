# SPDX-License-Identifier: MIT
# Sourced by the benches that run the NCCL interposer (nccl-tests.sh,
# torch-allreduce.sh), from the tree's top with top, B, work and die()
# set: lib and plugin become libpenny-nccl.so and penny-cuda.so, from
# PLUGINDIR (both built before) or built in $B (make, a C compiler and
# nvcc are enough; the log in $work/build.log); die() when neither is there.
lib=${PLUGINDIR:-$top/$B/plugins}/libpenny-nccl.so
plugin=${PLUGINDIR:-$top/$B/plugins}/penny-cuda.so
if [ -n "${PLUGINDIR:-}" ]; then
	[ -e "$lib" ] && [ -e "$plugin" ] || die "PLUGINDIR=$PLUGINDIR lacks libpenny-nccl.so or penny-cuda.so"
elif ! make -j"$(nproc)" B="$B" CFLAGS=-Wno-error "$B/plugins/libpenny-nccl.so" "$B/plugins/penny-cuda.so" \
	>"$work/build.log" 2>&1 || [ ! -e "$lib" ] || [ ! -e "$plugin" ]; then
	tail -n 30 "$work/build.log" >&2
	die "building libpenny-nccl.so and the cuda plugin failed (nvcc on PATH or in /usr/local/cuda?)"
fi
