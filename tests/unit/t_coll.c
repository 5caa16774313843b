/* SPDX-License-Identifier: MIT */
/* The collective layer's own state: tuning tables written and read back,
 * and handed to a collective by its caller. */
#define _GNU_SOURCE
#include "unit.h"

#include "engine/coll.h"
#include "base/ofile.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[] = "/tmp/penny-t-coll.XXXXXX";

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* pn_tune_save through an output file, as allreduce-test --tune-out writes it:
 * committed on success, nothing at path on failure. */
static int save(const char *path, int nranks, int nnodes, const size_t *bytes,
		const enum pn_algo *algo, int n)
{
	struct pn_ofile *of;
	int ret = pn_ofile_open(&of, path, 0);

	if (ret)
		return ret;
	ret = pn_tune_save(pn_ofile_file(of), path, nranks, nnodes, bytes, algo, n);
	if (ret) {
		pn_ofile_abort(of);
		return ret;
	}
	return pn_ofile_commit(of);
}

/* Everything pn_tune_save can write, pn_tune_load reads back to the same picks. */
TEST(tune_round_trip)
{
	static const size_t sizes[] = { 0, 1, 8, 1000, 4096, 65536, 1u << 20, (size_t)1 << 40,
					SIZE_MAX - 1, SIZE_MAX };
	static const int shapes[][2] = { { 1, 1 }, { 2, 1 }, { 8, 2 }, { 1024, 128 },
					 { 2147483647, 2147483647 } };
	size_t bytes[PN_ARRAY_SIZE(sizes)];
	enum pn_algo algo[PN_ARRAY_SIZE(sizes)];
	struct pn_tune t = { 0 };
	char path[256];
	size_t i, k;
	int a;

	path_of(path, sizeof(path), "tune");
	for (k = 0; k < PN_ARRAY_SIZE(shapes); k++)
		for (a = 0; a < PN_NALGOS; a++) {
			int nr = shapes[k][0], nn = shapes[k][1];

			for (i = 0; i < PN_ARRAY_SIZE(sizes); i++) {
				bytes[i] = sizes[i];
				/* every algorithm at every size, in every position */
				algo[i] = (enum pn_algo)((a + (int)i) % PN_NALGOS);
			}
			CHECK_EQ_INT(save(path, nr, nn, bytes, algo,
					  (int)PN_ARRAY_SIZE(sizes)), 0);
			CHECK_EQ_INT(pn_tune_load(&t, path), 0);
			for (i = 0; i < PN_ARRAY_SIZE(sizes); i++)
				CHECK_EQ_INT(pn_tune_pick(&t, nr, nn, sizes[i], 0), algo[i]);
		}
	/* an empty table (no sizes) is just the comment line, and loads */
	CHECK_EQ_INT(save(path, 2, 1, bytes, algo, 0), 0);
	CHECK_EQ_INT(pn_tune_load(&t, path), 0);
	CHECK_EQ_INT(t.n, 0);
	pn_tune_release(&t);
	unlink(path);
}

/* "auto" (or any algorithm that does not run) is refused, and no file is written. */
TEST(tune_save_refuses_auto)
{
	size_t bytes[2] = { 8, 1024 };
	enum pn_algo algo[2] = { PN_ALGO_RING, PN_ALGO_AUTO };
	char path[256];

	path_of(path, sizeof(path), "auto");
	CHECK(save(path, 2, 1, bytes, algo, 2) == -EINVAL);
	CHECK(access(path, F_OK) != 0);
	CHECK(strstr(pn_errmsg(-EINVAL), "'auto'") != NULL);
	algo[1] = PN_NALGOS;
	CHECK(save(path, 2, 1, bytes, algo, 2) == -EINVAL);
	algo[1] = PN_ALGO_RING;
	CHECK(save(path, 0, 1, bytes, algo, 2) == -EINVAL);
	CHECK(save(path, 2, 0, bytes, algo, 2) == -EINVAL);
	CHECK(access(path, F_OK) != 0);
	/* and the loader keeps refusing what the writer refuses */
	{
		FILE *f = fopen(path, "w");
		struct pn_tune t = { 0 };

		CHECK(f != NULL);
		if (f) {
			fprintf(f, "2 1 8 auto\n");
			fclose(f);
		}
		CHECK(pn_tune_load(&t, path) == -EINVAL);
		CHECK(t.tab == NULL);
		unlink(path);
	}
}

/*
 * The table is the caller's (the command reads PENNY_TUNE_FILE once): a
 * failed load leaves it as it was, and a collective picks auto from the
 * table it was handed, not from the environment.  A zeroed pn_coll (what a
 * failed pn_coll_init leaves) releases to nothing, twice.
 */
TEST(coll_picks_from_the_table_it_was_handed)
{
	struct pn_peer peers[2] = { { .node = 0, .local = 0 }, { .node = 0, .local = 1 } };
	struct pn_comm c = { .rank = 0, .nranks = 2, .nnodes = 1, .local_size = 2, .nchannels = 1,
			     .peers = peers };
	size_t bytes[1] = { 1u << 20 };
	enum pn_algo algo[1] = { PN_ALGO_TWO_SHOT };
	struct pn_tune t = { 0 };
	struct pn_coll co;
	char path[256], missing[256];

	path_of(path, sizeof(path), "handed");
	path_of(missing, sizeof(missing), "missing");
	CHECK_EQ_INT(save(path, 2, 1, bytes, algo, 1), 0);
	CHECK_EQ_INT(pn_tune_load(&t, path), 0);
	CHECK(pn_tune_load(&t, missing) == -ENOENT);
	CHECK_EQ_INT(t.n, 1);
	CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, 4096, 0), PN_ALGO_TWO_SHOT);
	CHECK_EQ_INT(pn_tune_pick(NULL, 2, 1, 4096, 0), PN_ALGO_ONE_SHOT);
	setenv("PENNY_TUNE_FILE", missing, 1);
	CHECK_EQ_INT(pn_coll_init(&co, &c, &t), 0);
	unsetenv("PENNY_TUNE_FILE");
	CHECK(co.comm == &c);
	CHECK(co.node != NULL && co.node[1] == 0);
	CHECK_EQ_INT(pn_allreduce_algo(&co, 1024, PN_FLOAT, PN_ALGO_AUTO, NULL, NULL),
		     PN_ALGO_TWO_SHOT);
	pn_coll_release(&co);
	CHECK_EQ_INT(pn_coll_init(&co, &c, NULL), 0);
	CHECK_EQ_INT(pn_allreduce_algo(&co, 1024, PN_FLOAT, PN_ALGO_AUTO, NULL, NULL),
		     PN_ALGO_ONE_SHOT);
	pn_coll_release(&co);
	pn_coll_release(&co);
	pn_tune_release(&t);
	unlink(path);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	RUN(tune_round_trip);
	RUN(tune_save_refuses_auto);
	RUN(coll_picks_from_the_table_it_was_handed);
	rmdir(dir);
	return unit_done();
}
