/* SPDX-License-Identifier: MIT */
/*
 * Speed of the host reduction kernels: GB/s of pn_reduce2 (sum unless -o)
 * per dtype at 4 KiB .. 16 MiB, for each kernel set, against a plain
 * scalar loop, memcpy of the same bytes and, when built with -DWITH_MPI,
 * Open MPI's MPI_Reduce_local.  GB/s = bytes of one buffer / this thread's
 * CPU time (1e9 B/s), best of several runs.  Built and run by tests/bench/reduce-speed.sh.
 *
 *   reduce-speed [-o OP] [-t TYPE] [-s SIZE]... [-x inplace|oop]
 */
#define _GNU_SOURCE
#include "engine/dtype.h"
#include "base/log.h"
#include "engine/reduce.h"
#include "engine/testdata.h"
#include "base/units.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef WITH_MPI
#include <mpi.h>
#endif

/* A plain loop per type (sum), as a program would write it; gcc -O2 keeps it scalar. */
static void naive_sum(void *d, const void *a, const void *b, size_t n, enum pn_dtype t)
{
	size_t i;

	switch (t) {
	case PN_INT8:
	case PN_UINT8:
		for (i = 0; i < n; i++)
			((uint8_t *)d)[i] = (uint8_t)(((const uint8_t *)a)[i] + ((const uint8_t *)b)[i]);
		break;
	case PN_INT32:
	case PN_UINT32:
		for (i = 0; i < n; i++)
			((uint32_t *)d)[i] = ((const uint32_t *)a)[i] + ((const uint32_t *)b)[i];
		break;
	case PN_INT64:
	case PN_UINT64:
		for (i = 0; i < n; i++)
			((uint64_t *)d)[i] = ((const uint64_t *)a)[i] + ((const uint64_t *)b)[i];
		break;
	case PN_HALF:
		for (i = 0; i < n; i++)
			((uint16_t *)d)[i] = pn_float_to_half(pn_half_to_float(((const uint16_t *)a)[i]) +
							     pn_half_to_float(((const uint16_t *)b)[i]));
		break;
	case PN_BFLOAT16:
		for (i = 0; i < n; i++)
			((uint16_t *)d)[i] = pn_float_to_bf16(pn_bf16_to_float(((const uint16_t *)a)[i]) +
							     pn_bf16_to_float(((const uint16_t *)b)[i]));
		break;
	case PN_FLOAT:
		for (i = 0; i < n; i++)
			((float *)d)[i] = ((const float *)a)[i] + ((const float *)b)[i];
		break;
	case PN_DOUBLE:
		for (i = 0; i < n; i++)
			((double *)d)[i] = ((const double *)a)[i] + ((const double *)b)[i];
		break;
	default:
		break;
	}
}

enum what { W_PENNY, W_NAIVE, W_MEMCPY, W_MPI };

struct run {
	enum what what;
	void *d, *a, *b;
	size_t n, bytes;
	enum pn_dtype t;
	enum pn_redop op;
};

#ifdef WITH_MPI
static int mpi_type(enum pn_dtype t, MPI_Datatype *mt)
{
	switch (t) {
	case PN_INT8: *mt = MPI_INT8_T; return 1;
	case PN_UINT8: *mt = MPI_UINT8_T; return 1;
	case PN_INT32: *mt = MPI_INT32_T; return 1;
	case PN_UINT32: *mt = MPI_UINT32_T; return 1;
	case PN_INT64: *mt = MPI_INT64_T; return 1;
	case PN_UINT64: *mt = MPI_UINT64_T; return 1;
	case PN_FLOAT: *mt = MPI_FLOAT; return 1;
	case PN_DOUBLE: *mt = MPI_DOUBLE; return 1;
	default: return 0; /* no half/bfloat16 in MPI 3 */
	}
}

static MPI_Op mpi_op(enum pn_redop op)
{
	switch (op) {
	case PN_PROD: return MPI_PROD;
	case PN_MIN: return MPI_MIN;
	case PN_MAX: return MPI_MAX;
	default: return MPI_SUM;
	}
}
#endif

static void once(const struct run *r)
{
	switch (r->what) {
	case W_PENNY: pn_reduce2(r->d, r->a, r->b, r->n, r->t, r->op); break;
	case W_NAIVE: naive_sum(r->d, r->a, r->b, r->n, r->t); break;
	case W_MEMCPY: memcpy(r->d, r->a, r->bytes); break;
	case W_MPI:
#ifdef WITH_MPI
	{
		MPI_Datatype mt;

		/* inoutbuf = inbuf op inoutbuf: d = b op d */
		if (mpi_type(r->t, &mt))
			MPI_Reduce_local(r->b, r->d, (int)r->n, mt, mpi_op(r->op));
	}
#endif
		break;
	}
}

/*
 * This thread's CPU time: the machine may be shared, and time spent
 * descheduled is not the kernel's.
 */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* GB/s, best of 7 runs of enough calls for ~10 ms each. */
static double measure(const struct run *r)
{
	double best = 1e30;
	int reps = 1;

	once(r); /* touch pages */
	for (;;) {
		double t0 = cpu_now();

		for (int i = 0; i < reps; i++)
			once(r);
		if (cpu_now() - t0 > 0.01 || reps > (1 << 24))
			break;
		reps *= 2;
	}
	for (int k = 0; k < 7; k++) {
		double t0 = cpu_now(), dt;

		for (int i = 0; i < reps; i++)
			once(r);
		dt = (cpu_now() - t0) / reps;
		if (dt < best)
			best = dt;
	}
	return (double)r->bytes / best / 1e9;
}

int main(int argc, char **argv)
{
	static const size_t def_sizes[] = { 4096, 65536, 1 << 20, 16 << 20 };
	size_t sizes[16], nsizes = 0;
	int types[PN_NDTYPES], ntypes = 0, inplace = 1, c;
	enum pn_redop op = PN_SUM;
	int have_avx2;

#ifdef WITH_MPI
	MPI_Init(&argc, &argv);
#endif
	while ((c = getopt(argc, argv, "o:t:s:x:")) != -1) {
		uint64_t v;
		enum pn_dtype t;

		switch (c) {
		case 'o':
			if (pn_redop_parse(optarg, &op)) {
				fprintf(stderr, "reduce-speed: %s\n", pn_errmsg(-1));
				return 2;
			}
			break;
		case 't':
			if (pn_dtype_parse(optarg, &t)) {
				fprintf(stderr, "reduce-speed: %s\n", pn_errmsg(-1));
				return 2;
			}
			if (ntypes < PN_NDTYPES)
				types[ntypes++] = t;
			break;
		case 's':
			if (pn_parse_size(optarg, &v) || !v || nsizes == 16) {
				fprintf(stderr, "reduce-speed: bad size '%s'\n", optarg);
				return 2;
			}
			sizes[nsizes++] = v;
			break;
		case 'x':
			inplace = !strcmp(optarg, "inplace");
			break;
		default:
			fprintf(stderr, "usage: reduce-speed [-o OP] [-t TYPE] [-s SIZE]... "
					"[-x inplace|oop]\n");
			return 2;
		}
	}
	if (!ntypes)
		for (int t = 0; t < PN_NDTYPES; t++)
			types[ntypes++] = t;
	if (!nsizes)
		for (size_t i = 0; i < 4; i++)
			sizes[nsizes++] = def_sizes[i];

	have_avx2 = pn_reduce_simd(PN_SIMD_AVX2) == PN_SIMD_AVX2;
	printf("# pn_reduce2 %s, %s, GB/s = buffer bytes / CPU time, best of 7\n",
	       pn_redop_name(op), inplace ? "in place (dst == a)" : "out of place");
	printf("# naive: plain scalar sum loop; memcpy: same bytes; mpi: MPI_Reduce_local%s\n",
#ifdef WITH_MPI
	       ""
#else
	       " (not built: no -DWITH_MPI)"
#endif
	);
	printf("%-9s %9s %9s %9s %9s %9s %9s %9s\n", "type", "size", "avx2", "generic", "naive",
	       "memcpy", "mpi", "avx2/mpi");
	for (int ti = 0; ti < ntypes; ti++) {
		for (size_t si = 0; si < nsizes; si++) {
			enum pn_dtype t = (enum pn_dtype)types[ti];
			size_t es = pn_dtype_size(t), n = sizes[si] / es, bytes = n * es;
			struct run r = { W_PENNY, NULL, NULL, NULL, n, bytes, t, op };
			double g_avx2 = 0, g_gen, g_naive, g_memcpy, g_mpi = 0;
			void *bufs[3];

			for (int k = 0; k < 3; k++) {
				if (posix_memalign(&bufs[k], 4096, bytes + 64))
					return 1;
				pn_testdata_fill(bufs[k], n, t, op, k, 1);
			}
			r.d = bufs[0];
			r.a = inplace ? bufs[0] : bufs[1];
			r.b = bufs[2];
			if (have_avx2) {
				pn_reduce_simd(PN_SIMD_AVX2);
				g_avx2 = measure(&r);
			}
			pn_reduce_simd(PN_SIMD_GENERIC);
			g_gen = measure(&r);
			pn_reduce_simd(PN_SIMD_AUTO);
			r.what = W_NAIVE;
			g_naive = op == PN_SUM ? measure(&r) : 0;
			r.what = W_MEMCPY;
			r.a = bufs[1];
			g_memcpy = measure(&r);
#ifdef WITH_MPI
			MPI_Datatype mt;

			r.what = W_MPI;
			if (mpi_type(t, &mt))
				g_mpi = measure(&r);
#endif
			printf("%-9s %9zu %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", pn_dtype_name(t), bytes,
			       g_avx2, g_gen, g_naive, g_memcpy, g_mpi, g_mpi > 0 ? g_avx2 / g_mpi : 0);
			fflush(stdout);
			for (int k = 0; k < 3; k++)
				free(bufs[k]);
		}
	}
#ifdef WITH_MPI
	MPI_Finalize();
#endif
	return 0;
}
