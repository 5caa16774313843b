#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds and runs tests/bench/reduce-speed.c: GB/s of the host reduction
# kernels per dtype and size, against a plain loop, memcpy and (when mpicc
# exists) Open MPI's MPI_Reduce_local.  Arguments go to the program:
#   tests/bench/reduce-speed.sh [-o sum|prod|min|max] [-t TYPE] [-s SIZE]... [-x inplace|oop]
# Environment: CC (default cc; mpicc is used when found and MPI=0 is not set), BUILD (default build).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${BUILD:-$top/build}/bench
mkdir -p "$out"
cc=${CC:-cc}
defs=
if [ "${MPI:-1}" != 0 ] && command -v mpicc >/dev/null 2>&1; then
	cc="mpicc"
	export OMPI_CC=${CC:-cc}
	defs=-DWITH_MPI
fi
# Same warnings and optimisation as the Makefile's default build.
$cc -std=c11 -O2 -g -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter \
	$defs -o "$out/reduce-speed" "$top/tests/bench/reduce-speed.c" \
	-I"$top/src" "$top/src/engine/reduce.c" "$top/src/engine/dtype.c" "$top/src/base/log.c" "$top/src/base/util.c" -lm
if [ -n "$defs" ]; then
	# one process, no network: MPI_Reduce_local only
	exec env OMPI_MCA_btl=self OMPI_MCA_pml=ob1 "$out/reduce-speed" "$@"
fi
exec "$out/reduce-speed" "$@"
