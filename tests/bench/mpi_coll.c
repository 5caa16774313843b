/* SPDX-License-Identifier: MIT */
/*
 * The Open MPI side of tests/bench/host-coll.sh: MPI_Allgather,
 * MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Bcast, MPI_Reduce (root 0)
 * and MPI_Sendrecv (rank r to r + 1), float, sum, timed like host_coll.c:
 * warm-up, barrier, ITERS(size) iterations, the slowest rank's average.
 * Prints "collective bytes time_us", bytes being nccl-tests' size.
 *   mpi_coll MINBYTES MAXBYTES FACTOR COLL[,COLL...]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int iters_of(long bytes)
{
	long n = (64L << 20) / (bytes ? bytes : 1);

	return n < 10 ? 10 : n > 200 ? 200 : (int)n;
}

/* One call of collective name on count floats (the count argument of NCCL's call). */
static void call(const char *name, float *in, float *out, int count, int rank, int n)
{
	if (!strcmp(name, "allgather"))
		MPI_Allgather(in, count, MPI_FLOAT, out, count, MPI_FLOAT, MPI_COMM_WORLD);
	else if (!strcmp(name, "reducescatter"))
		MPI_Reduce_scatter_block(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	else if (!strcmp(name, "alltoall"))
		MPI_Alltoall(in, count, MPI_FLOAT, out, count, MPI_FLOAT, MPI_COMM_WORLD);
	else if (!strcmp(name, "broadcast"))
		MPI_Bcast(out, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
	else if (!strcmp(name, "reduce"))
		MPI_Reduce(in, out, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
	else
		MPI_Sendrecv(in, count, MPI_FLOAT, (rank + 1) % n, 0, out, count, MPI_FLOAT,
			     (rank + n - 1) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* nccl-tests' size is the whole buffer for these: the count is per rank. */
static int per_rank(const char *name)
{
	return !strcmp(name, "allgather") || !strcmp(name, "reducescatter") ||
	       !strcmp(name, "alltoall");
}

int main(int argc, char **argv)
{
	long minb, maxb, f, i;
	int rank, n;
	float *in, *out;
	char *list, *name, *save = NULL;

	MPI_Init(&argc, &argv);
	if (argc != 5) {
		fprintf(stderr, "usage: mpi_coll MINBYTES MAXBYTES FACTOR COLL[,COLL...]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	minb = atol(argv[1]);
	maxb = atol(argv[2]);
	f = atol(argv[3]);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	in = malloc((size_t)maxb + 64);
	out = malloc((size_t)maxb + 64);
	for (i = 0; i < maxb / 4; i++)
		in[i] = out[i] = (float)(i % 17 - 8);
	list = strdup(argv[4]);
	for (name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save))
		for (long b = minb; b <= maxb; b *= f) {
			int count = (int)(b / 4 / (per_rank(name) ? n : 1)), iters = iters_of(b), k;
			double t0, t, tmax;

			if (!count)
				continue;
			for (k = 0; k < 5; k++)
				call(name, in, out, count, rank, n);
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
			for (k = 0; k < iters; k++)
				call(name, in, out, count, rank, n);
			t = (MPI_Wtime() - t0) / iters * 1e6;
			MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
			if (rank == 0)
				printf("%s %ld %.3f\n", name, (long)count * 4 * (per_rank(name) ? n : 1), tmax);
		}
	free(list);
	free(in);
	free(out);
	MPI_Finalize();
	return 0;
}
