/* SPDX-License-Identifier: MIT */
/*
 * The peer for tests/bench/host-allreduce.sh: MPI_Allreduce (float, sum,
 * out of place) timed like penny allreduce-test: warm-up, barrier, N timed
 * iterations, the slowest rank's average.  Prints "bytes time_us" per size.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long minb, maxb, f;
	int iters, warmup, rank, i;
	float *in, *out;

	MPI_Init(&argc, &argv);
	if (argc != 6) {
		fprintf(stderr, "usage: mpi_allreduce MINBYTES MAXBYTES FACTOR ITERS WARMUP\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	minb = atol(argv[1]);
	maxb = atol(argv[2]);
	f = atol(argv[3]);
	iters = atoi(argv[4]);
	warmup = atoi(argv[5]);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	in = malloc((size_t)maxb + 64);
	out = malloc((size_t)maxb + 64);
	for (i = 0; i < (int)(maxb / 4); i++)
		in[i] = (float)(i % 17 - 8);
	for (long b = minb; b <= maxb; b *= f) {
		int count = (int)(b / 4);
		double t0, t, tmax;

		for (i = 0; i < warmup; i++)
			MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (i = 0; i < iters; i++)
			MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		t = (MPI_Wtime() - t0) / iters * 1e6;
		MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		if (rank == 0)
			printf("%ld %.3f\n", b, tmax);
	}
	free(in);
	free(out);
	MPI_Finalize();
	return 0;
}
