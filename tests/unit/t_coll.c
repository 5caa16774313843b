/* SPDX-License-Identifier: MIT */
/* The collective layer's own state: tuning tables written and read back,
 * and handed to a collective by its caller. */
#define _GNU_SOURCE
#include "unit.h"

#include "engine/coll.h"
#include "base/file.h"
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
		const enum pn_algo *algo, const enum pn_algo *ip, int n)
{
	struct pn_ofile *of;
	int ret = pn_ofile_open(&of, path, 0);

	if (ret)
		return ret;
	ret = pn_tune_save(pn_ofile_file(of), path, nranks, nnodes, bytes, algo, ip, n);
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
			CHECK_EQ_INT(save(path, nr, nn, bytes, algo, NULL,
					  (int)PN_ARRAY_SIZE(sizes)), 0);
			CHECK_EQ_INT(pn_tune_load(&t, path), 0);
			for (i = 0; i < PN_ARRAY_SIZE(sizes); i++)
				CHECK_EQ_INT(pn_tune_pick(&t, nr, nn, sizes[i], 0, 0), algo[i]);
		}
	/* an empty table (no sizes) is just the comment line, and loads */
	CHECK_EQ_INT(save(path, 2, 1, bytes, algo, NULL, 0), 0);
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
	CHECK(save(path, 2, 1, bytes, algo, NULL, 2) == -EINVAL);
	CHECK(access(path, F_OK) != 0);
	CHECK(strstr(pn_errmsg(-EINVAL), "'auto'") != NULL);
	algo[1] = PN_NALGOS;
	CHECK(save(path, 2, 1, bytes, algo, NULL, 2) == -EINVAL);
	algo[1] = PN_ALGO_RING;
	CHECK(save(path, 0, 1, bytes, algo, NULL, 2) == -EINVAL);
	CHECK(save(path, 2, 0, bytes, algo, NULL, 2) == -EINVAL);
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
	CHECK_EQ_INT(save(path, 2, 1, bytes, algo, NULL, 1), 0);
	CHECK_EQ_INT(pn_tune_load(&t, path), 0);
	CHECK(pn_tune_load(&t, missing) == -ENOENT);
	CHECK_EQ_INT(t.n, 1);
	CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, 4096, 0, 0), PN_ALGO_TWO_SHOT);
	CHECK_EQ_INT(pn_tune_pick(NULL, 2, 1, 4096, 0, 0), PN_ALGO_ONE_SHOT);
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

/*
 * Lines for the other collectives ("allgather 4 1 64K ring") beside
 * allreduce's: each collective picks from its own lines, allreduce ignores
 * them, an algorithm the collective lacks is refused naming the line.
 */
TEST(tune_lines_of_the_other_collectives)
{
	static const char text[] = "# mixed\n"
				   "4 1 1M two-shot\n"
				   "allgather 4 1 64K ring\n"
				   "allgather 4 1 1G one-shot\n"
				   "all_to_all 4 1 1K bruck\n"
				   "broadcast 4 2 8M tree\n"
				   "allreduce 4 1 8 one-shot\n";
	struct pn_tune t = { 0 };
	int ret;

	ret = pn_tune_parse(text, sizeof(text) - 1, "t", &t.tab, &t.n);
	CHECK_EQ_INT(ret, 0);
	CHECK_EQ_INT(t.n, 6);
	CHECK_EQ_INT(pn_tune_pick(&t, 4, 1, 8, 0, 0), PN_ALGO_ONE_SHOT);
	CHECK_EQ_INT(pn_tune_pick(&t, 4, 1, 4096, 0, 0), PN_ALGO_TWO_SHOT);
	CHECK_EQ_INT(pn_tune_pick_coll(&t, PN_COLL_ALLGATHER, 4, 1, 4096, 0), PN_CALGO_RING);
	CHECK_EQ_INT(pn_tune_pick_coll(&t, PN_COLL_ALLGATHER, 4, 1, 1u << 20, 0), PN_CALGO_ONE_SHOT);
	CHECK_EQ_INT(pn_tune_pick_coll(&t, PN_COLL_ALLTOALL, 4, 1, 1024, 0), PN_CALGO_BRUCK);
	CHECK_EQ_INT(pn_tune_pick_coll(&t, PN_COLL_BROADCAST, 4, 2, 1024, 0), PN_CALGO_TREE);
	/* no line: the built-in rule */
	CHECK_EQ_INT(pn_tune_pick_coll(&t, PN_COLL_BROADCAST, 4, 1, 1024, 1), PN_CALGO_ONE_SHOT);
	pn_tune_release(&t);
	ret = pn_tune_parse("reduce 2 1 8 pairwise\n", 22, "bad", &t.tab, &t.n);
	CHECK_EQ_INT(ret, -EINVAL);
	CHECK(strstr(pn_errmsg(ret), "bad:1:") != NULL);
	CHECK_EQ_INT(pn_tune_parse("gather 2 1 8 ring\n", 18, "bad", &t.tab, &t.n), -EINVAL);
	CHECK_EQ_INT(pn_tune_parse("allgather 2 1 8 two-shot\n", 25, "bad", &t.tab, &t.n), -EINVAL);
	CHECK_EQ_INT(pn_tune_parse("allgather 2 1 8\n", 16, "bad", &t.tab, &t.n), -EINVAL);
	CHECK_EQ_INT(pn_tune_parse("allgather 2 1 8 ring x\n", 23, "bad", &t.tab, &t.n), -EINVAL);
}

/* The built-in rule (README: Tuning): direct within a node; over the FIFOs
 * one-shot up to 16 KiB, then ring (pairwise for alltoall); bruck for tiny
 * alltoall blocks from 8 ranks; a tree for small broadcasts from 5 ranks. */
TEST(tune_builtin_rule_of_the_other_collectives)
{
	int k;

	for (k = 1; k < PN_NCOLLS; k++) {
		enum pn_calgo a = pn_tune_pick_coll(NULL, (enum pn_coll_kind)k, 4, 1, 1u << 24, 1);

		CHECK(pn_calgo_valid((enum pn_coll_kind)k, a));
		CHECK_EQ_INT(a, PN_CALGO_ONE_SHOT);
		CHECK(pn_calgo_valid((enum pn_coll_kind)k,
				     pn_tune_pick_coll(NULL, (enum pn_coll_kind)k, 1, 1, 8, 0)));
	}
	CHECK_EQ_INT(pn_tune_pick_coll(NULL, PN_COLL_ALLGATHER, 4, 2, 16384, 0), PN_CALGO_ONE_SHOT);
	CHECK_EQ_INT(pn_tune_pick_coll(NULL, PN_COLL_ALLGATHER, 4, 2, 16385, 0), PN_CALGO_RING);
	CHECK_EQ_INT(pn_tune_pick_coll(NULL, PN_COLL_REDUCE, 4, 2, 1u << 20, 0), PN_CALGO_RING);
	CHECK_EQ_INT(pn_tune_pick_coll(NULL, PN_COLL_ALLTOALL, 4, 2, 1u << 20, 0), PN_CALGO_PAIRWISE);
	CHECK_EQ_INT(pn_tune_pick_coll(NULL, PN_COLL_ALLTOALL, 8, 2, 64 * 256, 0), PN_CALGO_BRUCK);
	CHECK_EQ_INT(pn_tune_pick_coll(NULL, PN_COLL_ALLTOALL, 8, 2, 64 * 257, 0), PN_CALGO_PAIRWISE);
	CHECK_EQ_INT(pn_tune_pick_coll(NULL, PN_COLL_BROADCAST, 8, 2, 1024, 0), PN_CALGO_TREE);
	CHECK_EQ_INT(pn_tune_pick_coll(NULL, PN_COLL_SENDRECV, 8, 2, 1u << 30, 0), PN_CALGO_ONE_SHOT);
}

/*
 * The built-in allreduce rule on one node with registered buffers, as
 * measured on the host with two ranks and every input rewritten before each
 * call (results/2026-11-30-dev): out of place the ring up to 32 KiB, then
 * two-shot; in place one-shot (over the FIFOs) up to 64 KiB, then two-shot
 * up to 8 MiB, then the ring.  pn_allreduce_algo tells in place by one
 * registration handed as both.  More ranks and no registrations: as before.
 */
TEST(tune_builtin_in_place_and_out_of_place)
{
	static const struct {
		size_t bytes;
		enum pn_algo oop, ip;
	} want[] = {
		{ 8, PN_ALGO_RING, PN_ALGO_ONE_SHOT },
		{ 4096, PN_ALGO_RING, PN_ALGO_ONE_SHOT },
		{ 32768, PN_ALGO_RING, PN_ALGO_ONE_SHOT },
		{ 32769, PN_ALGO_TWO_SHOT, PN_ALGO_ONE_SHOT },
		{ 65536, PN_ALGO_TWO_SHOT, PN_ALGO_ONE_SHOT },
		{ 65537, PN_ALGO_TWO_SHOT, PN_ALGO_TWO_SHOT },
		{ 1u << 20, PN_ALGO_TWO_SHOT, PN_ALGO_TWO_SHOT },
		{ 8u << 20, PN_ALGO_TWO_SHOT, PN_ALGO_TWO_SHOT },
		{ (8u << 20) + 1, PN_ALGO_TWO_SHOT, PN_ALGO_RING },
		{ 64u << 20, PN_ALGO_TWO_SHOT, PN_ALGO_RING },
	};
	struct pn_peer peers[2] = { { .transport = &pn_transport_shm, .node = 0, .local = 0 },
				    { .transport = &pn_transport_shm, .node = 0, .local = 1 } };
	struct pn_comm c = { .rank = 0, .nranks = 2, .nnodes = 1, .local_size = 2, .nchannels = 1,
			     .peers = peers };
	struct pn_reg sreg = { 0 }, rreg = { 0 };
	struct pn_coll co;
	size_t i;

	for (i = 0; i < PN_ARRAY_SIZE(want); i++) {
		CHECK_EQ_INT(pn_tune_pick(NULL, 2, 1, want[i].bytes, 1, 0), want[i].oop);
		CHECK_EQ_INT(pn_tune_pick(NULL, 2, 1, want[i].bytes, 1, 1), want[i].ip);
	}
	/* more ranks, and no registrations: as before */
	CHECK_EQ_INT(pn_tune_pick(NULL, 4, 1, 65536, 1, 1), PN_ALGO_ONE_SHOT);
	CHECK_EQ_INT(pn_tune_pick(NULL, 4, 1, 65537, 1, 0), PN_ALGO_TWO_SHOT);
	CHECK_EQ_INT(pn_tune_pick(NULL, 4, 1, 64u << 20, 1, 1), PN_ALGO_TWO_SHOT);
	CHECK_EQ_INT(pn_tune_pick(NULL, 2, 1, 16384, 0, 1), PN_ALGO_ONE_SHOT);
	CHECK_EQ_INT(pn_tune_pick(NULL, 2, 1, 16385, 0, 0), PN_ALGO_RING);
	CHECK_EQ_INT(pn_coll_init(&co, &c, NULL), 0);
	CHECK_EQ_INT(pn_allreduce_algo(&co, 8192, PN_FLOAT, PN_ALGO_AUTO, &sreg, &rreg),
		     PN_ALGO_RING);
	CHECK_EQ_INT(pn_allreduce_algo(&co, 8193, PN_FLOAT, PN_ALGO_AUTO, &sreg, &rreg),
		     PN_ALGO_TWO_SHOT);
	/* 64 KiB of floats in place: one-shot; one float more: two-shot */
	CHECK_EQ_INT(pn_allreduce_algo(&co, 16384, PN_FLOAT, PN_ALGO_AUTO, &rreg, &rreg),
		     PN_ALGO_ONE_SHOT);
	CHECK_EQ_INT(pn_allreduce_algo(&co, 16385, PN_FLOAT, PN_ALGO_AUTO, &rreg, &rreg),
		     PN_ALGO_TWO_SHOT);
	CHECK_EQ_INT(pn_allreduce_algo(&co, 65536, PN_FLOAT, PN_ALGO_TWO_SHOT, &rreg, &rreg),
		     PN_ALGO_TWO_SHOT);
	pn_coll_release(&co);
}

/*
 * In place and out of place may need different picks: --tune-out writes a
 * line per mode where they differ ("2 1 4096 ring in-place"), one line
 * without a mode where they agree, and a file without modes (written before
 * them) still loads and holds for both.  At one max_bytes the line of the
 * call's mode wins over a line without one; modes are allreduce's only.
 */
TEST(tune_in_place_and_out_of_place_lines)
{
	static const char old[] = "2 1 4096 two-shot\n2 1 1M ring\n";
	static const char text[] = "2 1 4096 one-shot out-of-place\n"
				   "2 1 4096 ring in-place\n"
				   "2 1 64K two-shot\n"
				   "2 1 64K simple-ring in-place\n"
				   "allreduce 2 1 1M multiring in-place\n";
	static const char *const bad[] = { "allgather 2 1 8 ring in-place", "2 1 8 in-place",
					   "2 1 8 ring in-place in-place", "2 1 8 ring inplace",
					   "in-place 2 1 8 ring" };
	size_t bytes[3] = { 64, 4096, 1u << 20 };
	enum pn_algo oop[3] = { PN_ALGO_ONE_SHOT, PN_ALGO_ONE_SHOT, PN_ALGO_TWO_SHOT };
	enum pn_algo ip[3] = { PN_ALGO_ONE_SHOT, PN_ALGO_RING, PN_ALGO_RING };
	struct pn_tune t = { 0 };
	char path[256], *body = NULL;
	size_t len = 0;
	int i;

	CHECK_EQ_INT(pn_tune_parse(old, sizeof(old) - 1, "old", &t.tab, &t.n), 0);
	for (i = 0; i < 2; i++) {
		CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, 4096, 1, i), PN_ALGO_TWO_SHOT);
		CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, 8192, 1, i), PN_ALGO_RING);
	}
	pn_tune_release(&t);
	CHECK_EQ_INT(pn_tune_parse(text, sizeof(text) - 1, "t", &t.tab, &t.n), 0);
	CHECK_EQ_INT(t.n, 5);
	CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, 16, 1, 0), PN_ALGO_ONE_SHOT);
	CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, 16, 1, 1), PN_ALGO_RING);
	CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, 8192, 1, 0), PN_ALGO_TWO_SHOT);
	CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, 8192, 1, 1), PN_ALGO_SIMPLE_RING);
	CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, 1u << 20, 1, 1), PN_ALGO_MULTIRING);
	/* no out-of-place line that large: the built-in rule */
	CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, 1u << 20, 1, 0), PN_ALGO_TWO_SHOT);
	pn_tune_release(&t);
	path_of(path, sizeof(path), "modes");
	CHECK_EQ_INT(save(path, 2, 1, bytes, oop, ip, 3), 0);
	CHECK_EQ_INT(pn_file_read(path, &body, &len), 0);
	CHECK(body && strstr(body, "\n2 1 64 one-shot\n") &&
	      strstr(body, "\n2 1 4096 one-shot out-of-place\n2 1 4096 ring in-place\n") &&
	      strstr(body, "\n2 1 1048576 two-shot out-of-place\n2 1 1048576 ring in-place\n"));
	free(body);
	CHECK_EQ_INT(pn_tune_load(&t, path), 0);
	CHECK_EQ_INT(t.n, 5);
	for (i = 0; i < 3; i++) {
		CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, bytes[i], 1, 0), oop[i]);
		CHECK_EQ_INT(pn_tune_pick(&t, 2, 1, bytes[i], 1, 1), ip[i]);
	}
	pn_tune_release(&t);
	unlink(path);
	for (i = 0; i < (int)PN_ARRAY_SIZE(bad); i++)
		CHECK_EQ_INT(pn_tune_parse(bad[i], strlen(bad[i]), "b", &t.tab, &t.n), -EINVAL);
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
	RUN(tune_lines_of_the_other_collectives);
	RUN(tune_builtin_rule_of_the_other_collectives);
	RUN(tune_builtin_in_place_and_out_of_place);
	RUN(tune_in_place_and_out_of_place_lines);
	rmdir(dir);
	return unit_done();
}
