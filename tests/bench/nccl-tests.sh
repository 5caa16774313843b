#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# NVIDIA's nccl-tests as operators run them, NCCL alone against NCCL through
# the interposer (LD_PRELOAD=libpenny-nccl.so), in the same call: builds the
# given nccl-tests checkout against the Python environment's NCCL (or
# NCCL_HOME), then for each collective of COLLS (all_reduce, reduce_scatter,
# all_gather: what the interposer runs) and each of GRAPHS, one process with
# a thread per GPU (-t NGPU -g 1: each thread calls on its own communicator,
# which penny runs) and, with GROUPED=1, one thread for every GPU (-g NGPU:
# grouped calls, which penny runs too: that thread made every rank); per
# size penny's time over NCCL's, out of place and in place, and every run's
# #wrong.
#   tests/bench/nccl-tests.sh NCCL_TESTS_DIR [OUTDIR]   (OUTDIR default: results)
# Environment: B (build dir of penny's plugins, default build-gpu), PLUGINDIR
# (libpenny-nccl.so and penny-cuda.so built before; else built in B), NGPU
# (the GPUs, default every visible one), COLLS, GRAPHS ("0 10"), DTYPE
# (bfloat16), MINB (1K), MAXB (64M), ITERS (100), WARMUP (20), GROUPED (0),
# TIMEOUT (seconds per run, 300), NCCL_HOME (include/ and lib/ of the NCCL to
# build against and run; default the Python environment's nvidia/nccl).
# Writes OUTDIR/nccl-tests-DATE-xN.txt.  Exit: 0 when every run finished
# with 0 wrong and penny ran each collective of every run, 1
# otherwise, 2 when it could not run.
set -u
export NCCL_NVLS_ENABLE=0
top=$(cd "$(dirname "$0")/../.." && pwd)
die() {
	echo "nccl-tests: $*" >&2
	exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: tests/bench/nccl-tests.sh NCCL_TESTS_DIR [OUTDIR]"
src=$(cd "$1" 2>/dev/null && pwd) || die "no directory '$1'"
[ -f "$src/src/common.cu" ] && [ -f "$src/src/Makefile" ] || die "'$1' is not an nccl-tests checkout"
out=${2:-$top/results}
B=${B:-build-gpu}
COLLS=${COLLS:-all_reduce reduce_scatter all_gather}
for c in $COLLS; do
	case $c in
	all_reduce | reduce_scatter | all_gather) ;;
	*) die "COLLS: '$c' is not all_reduce, reduce_scatter or all_gather" ;;
	esac
done
for g in ${GRAPHS:-0 10}; do
	[[ $g =~ ^[0-9]{1,4}$ ]] || die "GRAPHS: '$g' is not a count of graph launches (0..9999)"
done
for v in ITERS WARMUP TIMEOUT; do
	x=${!v:-1}
	[[ $x =~ ^[1-9][0-9]{0,6}$ ]] || die "$v: '$x' is not a count 1..9999999"
done
case ${GROUPED:-0} in 0 | 1) ;; *) die "GROUPED: '${GROUPED}' is not 0 or 1" ;; esac
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || die "no nvcc (CUDA toolkit)"
ngpu=${NGPU:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
[[ $ngpu =~ ^[0-9]+$ ]] && [ "$ngpu" -ge 2 ] || die "needs 2 GPUs or more (NGPU=${NGPU:-unset}, nvidia-smi sees ${ngpu:-none})"
if [ -z "${NCCL_HOME:-}" ]; then
	d=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)
	[ -n "$d" ] && [ -e "$d/lib/libnccl.so.2" ] || die "no NCCL: set NCCL_HOME or install the nvidia-nccl wheel"
	NCCL_HOME=$d
fi
real=$NCCL_HOME/lib/libnccl.so.2
[ -e "$real" ] && [ -e "$NCCL_HOME/include/nccl.h" ] || die "NCCL_HOME=$NCCL_HOME lacks include/nccl.h or lib/libnccl.so.2"
mkdir -p "$out" || die "cannot make $out"
work=$(mktemp -d "${TMPDIR:-/tmp}/nccl-tests.XXXXXX") || die "no temporary directory"
trap 'rm -rf "$work"' EXIT

cd "$top" || exit 2
. "$top/tests/bench/interposer-build.sh"
# nccl-tests links -lnccl: the wheel has libnccl.so.2 only
mkdir -p "$work/nccl/lib" && ln -s "$NCCL_HOME/include" "$work/nccl/include" &&
	ln -s "$real" "$work/nccl/lib/libnccl.so" || die "cannot lay out NCCL for the build"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
[[ $cc =~ ^[0-9]+$ ]] || die "cannot read the GPUs' compute capability"
targets=()
for c in $COLLS; do targets+=("$work/nt/${c}_perf"); done
if ! timeout 1200 make -C "$src/src" -j"$(nproc)" BUILDDIR="$work/nt" NCCL_HOME="$work/nccl" \
	NVCC_GENCODE="-gencode=arch=compute_$cc,code=sm_$cc" "${targets[@]}" >"$work/nt-build.log" 2>&1; then
	tail -n 20 "$work/nt-build.log" >&2
	die "building nccl-tests failed"
fi
export LD_LIBRARY_PATH=$NCCL_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

stamp=$(date -u +%Y-%m-%d)
report=$out/nccl-tests-$stamp-x$ngpu.txt
exec > >(tee "$report") 2>&1
echo "# nccl-tests through penny's interposer, $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), $ngpu GPUs"
# a copy without .git inside another checkout would name that one's commit
ver="not a git checkout"
[ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$src" ] && ver=$(git -C "$src" log -1 --format=%h)
echo "# nccl-tests: $src ($ver); NCCL: $real"
rc=0
# run OUT PENNY ARGS...: one nccl-tests run (PENNY 1: through the interposer)
run() {
	local f=$1 p=$2
	shift 2
	if [ "$p" = 1 ]; then
		PENNY_NCCL_DEBUG=1 PENNY_NCCL_PLUGIN=$plugin PENNY_NCCL_REAL=$real LD_PRELOAD=$lib \
			timeout -k 10 "${TIMEOUT:-300}" "$@" >"$f" 2>&1
	else
		timeout -k 10 "${TIMEOUT:-300}" "$@" >"$f" 2>&1
	fi
}
# rows FILE: size, out-of-place time, in-place time, #wrong (both)
rows() { awk '$1 ~ /^[0-9]+$/ && NF >= 13 { print $1, $6, $10, $9 + $13 }' "$1"; }
for c in $COLLS; do
	call=ncclAllReduce
	[ "$c" = reduce_scatter ] && call=ncclReduceScatter
	[ "$c" = all_gather ] && call=ncclAllGather
	for g in ${GRAPHS:-0 10}; do
		for how in threads grouped; do
			[ "$how" = grouped ] && [ "${GROUPED:-0}" = 0 ] && continue
			args=(-t "$ngpu" -g 1)
			[ "$how" = grouped ] && args=(-t 1 -g "$ngpu")
			args+=(-b "${MINB:-1K}" -e "${MAXB:-64M}" -f 4 -n "${ITERS:-100}" -w "${WARMUP:-20}"
				-d "${DTYPE:-bfloat16}" -G "$g")
			w=$work/$c-$how-G$g
			echo "## ${c}_perf ${args[*]}"
			run "$w-nccl.txt" 0 "$work/nt/${c}_perf" "${args[@]}"
			e0=$?
			run "$w-penny.txt" 1 "$work/nt/${c}_perf" "${args[@]}"
			e1=$?
			grep "^penny-nccl:" "$w-penny.txt" | sort | uniq -c | sed 's/^/# /' | head -n 8
			echo "# exit: NCCL $e0, through the interposer $e1"
			[ $e0 -eq 0 ] && [ $e1 -eq 0 ] || rc=1
			if ! grep -q "penny runs $call (the first" "$w-penny.txt"; then
				echo "# penny ran no $call: the interposer's lines above say why"
				rc=1
			fi
			printf '%12s %10s %10s %10s %10s %8s %8s %6s %6s\n' size nccl_us penny_us nccl_ip \
				penny_ip ratio ratio_ip wrong wrong
			# the same arguments: the same sizes, row by row
			paste -d ' ' <(rows "$w-nccl.txt") <(rows "$w-penny.txt") | awk '$1 != $5 { bad++; next } {
				printf "%12d %10.2f %10.2f %10.2f %10.2f %8.3f %8.3f %6d %6d\n",
					$1, $2, $6, $3, $7, $6 / $2, $7 / $3, $4, $8
				bad += $4 + $8 } END { exit bad > 0 }' || rc=1
			[ -n "$(rows "$w-penny.txt")" ] || { echo "# no rows through the interposer"; rc=1; }
		done
	done
done
echo "# exit $rc"
exit $rc
