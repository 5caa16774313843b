/* SPDX-License-Identifier: MIT */
/* The collective layer's own state: tuning tables written and read back,
 * and pn_coll_init's ownership on failure. */
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
			CHECK_EQ_INT(pn_tune_load(path), 0);
			for (i = 0; i < PN_ARRAY_SIZE(sizes); i++)
				CHECK_EQ_INT(pn_tune_pick(nr, nn, sizes[i], 0), algo[i]);
		}
	/* an empty table (no sizes) is just the comment line, and loads */
	CHECK_EQ_INT(save(path, 2, 1, bytes, algo, 0), 0);
	CHECK_EQ_INT(pn_tune_load(path), 0);
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

		CHECK(f != NULL);
		if (f) {
			fprintf(f, "2 1 8 auto\n");
			fclose(f);
		}
		CHECK(pn_tune_load(path) == -EINVAL);
		unlink(path);
	}
}

/* A failed pn_coll_init leaves nothing to free: release after it is harmless
 * (it used to free the node array twice). */
TEST(coll_init_failure_owns_nothing)
{
	struct pn_peer peers[2] = { { .node = 0, .local = 0 }, { .node = 0, .local = 1 } };
	struct pn_comm c = { .rank = 0, .nranks = 2, .nnodes = 1, .local_size = 2, .nchannels = 1,
			     .peers = peers };
	struct pn_coll co;
	char path[256];

	path_of(path, sizeof(path), "missing");
	setenv("PENNY_TUNE_FILE", path, 1);
	CHECK(pn_coll_init(&co, &c) == -ENOENT);
	CHECK(co.comm == NULL);
	CHECK(co.node == NULL);
	pn_coll_release(&co);
	pn_coll_release(&co);
	unsetenv("PENNY_TUNE_FILE");
	CHECK_EQ_INT(pn_coll_init(&co, &c), 0);
	CHECK(co.comm == &c);
	CHECK(co.node != NULL && co.node[1] == 0);
	pn_coll_release(&co);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	RUN(tune_round_trip);
	RUN(tune_save_refuses_auto);
	RUN(coll_init_failure_owns_nothing);
	rmdir(dir);
	return unit_done();
}
