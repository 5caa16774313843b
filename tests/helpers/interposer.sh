# SPDX-License-Identifier: MIT
# Sourced by the NCCL interposer's tests (t0610-t0613) after tests/lib.sh:
# the fake NCCL and CUDA driver, the test cuda plugin and nccl-caller.
#   ip CMD...      CMD with libpenny-nccl.so preloaded over the fakes
#                  (PLUGIN: penny's backend, LIMIT: seconds, 120)
#   run CMD...     ip with its output in out and err, both shown on failure
#   all_ok WHAT N  every one of N ranks said "WHAT ok"
#   nccl_ar        the allreduce calls that reached the fake NCCL
fakes=$BUILD/tests/plugins
lib=$BUILD/plugins/libpenny-nccl.so
caller=$fakes/nccl-caller
export PENNY_FAKE_NCCL_DIR=$TRASH PENNY_FAKE_NCCL_LOG=$TRASH/nccl.log
# the sanitizer builds: a preloaded library comes before the runtime
export ASAN_OPTIONS=verify_asan_link_order=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
ip() {
	rm -f nccl.log
	env LD_LIBRARY_PATH="$fakes/fakecuda" LD_PRELOAD="$lib" \
		PENNY_NCCL_PLUGIN="${PLUGIN:-$fakes/cuda/penny-cuda.so}" timeout "${LIMIT:-120}" "$@"
}
run() { ip "$@" >out 2>err || { echo "exit $?: $*"; cat out err; return 1; }; }
all_ok() { test "$(grep -c ": $1 ok" out)" -eq "$2" || { cat out err; return 1; }; }
nccl_ar() { grep -c " ncclAllReduce " nccl.log || true; }
