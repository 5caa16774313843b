/* SPDX-License-Identifier: MIT */
/*
 * The plugin loader (search order, versioned lookup, the one-line errors)
 * with the test plugins of $BUILD/tests/plugins, and the data formula of
 * plugins/include/penny_data.h (values computed independently).
 */
#define _GNU_SOURCE
#include "unit.h"

#include "../../plugins/include/penny_data.h"
#include "base/log.h"
#include "gpu/plugin.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char fakes[4096], tmp[256];

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	size_t n;

	if (!in || !out) {
		printf("# cannot copy %s to %s\n", from, to);
		exit(1);
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	fclose(out);
}

TEST(loads_a_plugin_from_penny_plugin_path)
{
	struct pn_plugin *p = NULL;

	pn_plugin_set_path(fakes);
	CHECK_EQ_INT(pn_plugin_load("fake", &p), 0);
	CHECK(p && p->ops);
	if (!p || !p->ops)
		return;
	CHECK_STR(p->ops->name, "fake");
	CHECK_STR(p->ops->version, "first");
	CHECK_EQ_INT(p->abi, PENNY_PLUGIN_ABI_V1);
	CHECK(strstr(p->path, "/penny-fake.so") != NULL);
	pn_plugin_unload(p);
}

/*
 * The test plugin's driver behaves like CUDA's across fork(): a child of a
 * process that used it gets "initialization error (CUDA error 3)", so a
 * test of penny fails where penny uses the GPU library before it forks
 * the ranks (the cause of check's SKIPped diagnosis on GPU nodes).
 */
TEST(the_test_driver_refuses_a_child_forked_after_it_was_used)
{
	struct pn_plugin *p = NULL;
	struct penny_bw_v1 q = { .bytes = 4096, .iters = 1 };
	int fd[2], st = 0;
	char got[8] = "";
	pid_t pid;

	pn_plugin_set_path(fakes);
	CHECK_EQ_INT(pn_plugin_load("fake", &p), 0);
	if (!p || !p->ops || !p->ops->bw)
		return;
	CHECK_EQ_INT(pipe(fd), 0);
	/* a fresh child may still use it: nothing was initialised yet */
	pid = fork();
	if (!pid) {
		struct penny_bw_v1 c = q;

		_exit(p->ops->bw(&c) ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st));
	CHECK_EQ_INT(p->ops->bw(&q), 0);
	pid = fork();
	if (!pid) {
		struct penny_bw_v1 c = q;
		int r = p->ops->bw(&c);

		if (write(fd[1], r == -EIO ? "EIO" : "other", r == -EIO ? 4 : 6) < 0)
			_exit(2);
		_exit(0);
	}
	close(fd[1]);
	CHECK(pid > 0 && read(fd[0], got, sizeof(got) - 1) > 0);
	CHECK_STR(got, "EIO");
	CHECK(waitpid(pid, &st, 0) == pid);
	close(fd[0]);
	/* the parent itself still may */
	CHECK_EQ_INT(p->ops->bw(&q), 0);
	pn_plugin_unload(p);
}

TEST(a_table_of_the_first_v1_size_loads_without_the_appended_members)
{
	struct pn_plugin *p = NULL, *q = NULL;
	size_t ag = offsetof(struct penny_plugin_v1, allgather);

	pn_plugin_set_path(fakes);
	CHECK_EQ_INT(pn_plugin_load("fakeold", &p), 0);
	CHECK_EQ_INT(pn_plugin_load("fake", &q), 0);
	if (!p || !q)
		return;
	CHECK_EQ_INT(p->ops->size, PENNY_PLUGIN_V1_MIN_SIZE);
	CHECK(!pn_plugin_covers(p, ag));
	CHECK(pn_plugin_covers(p, offsetof(struct penny_plugin_v1, bw)));
	CHECK(pn_plugin_covers(q, ag) && q->ops->allgather != NULL);
	pn_plugin_unload(p);
	pn_plugin_unload(q);
}

TEST(first_directory_wins)
{
	char d1[300], d2[300], f[400], path[8300];
	struct pn_plugin *p = NULL;

	snprintf(d1, sizeof(d1), "%s/a", tmp);
	snprintf(d2, sizeof(d2), "%s/b", tmp);
	mkdir(d1, 0755);
	mkdir(d2, 0755);
	snprintf(f, sizeof(f), "%s/penny-fake2.so", fakes);
	snprintf(path, sizeof(path), "%s/penny-fake.so", d1);
	copy_file(f, path);
	snprintf(f, sizeof(f), "%s/penny-fake.so", fakes);
	snprintf(path, sizeof(path), "%s/penny-fake.so", d2);
	copy_file(f, path);
	snprintf(path, sizeof(path), "%s:%s", d1, d2);
	pn_plugin_set_path(path);
	CHECK_EQ_INT(pn_plugin_load("fake", &p), 0);
	CHECK(p && !strcmp(p->ops->version, "second"));
	pn_plugin_unload(p);
	snprintf(path, sizeof(path), "%s::%s", d2, d1); /* empty entries are skipped */
	pn_plugin_set_path(path);
	CHECK_EQ_INT(pn_plugin_load("fake", &p), 0);
	CHECK(p && !strcmp(p->ops->version, "first"));
	pn_plugin_unload(p);
}

TEST(missing_plugin_is_one_line_naming_the_search)
{
	struct pn_plugin *p = (void *)1;
	const char *m;
	int ret;

	pn_plugin_set_path(tmp);
	ret = pn_plugin_load("nosuch", &p);
	CHECK_EQ_INT(ret, -ENOENT);
	CHECK(p == NULL);
	m = pn_errmsg(ret);
	CHECK(strstr(m, "the nosuch plugin (penny-nosuch.so) is not installed") != NULL);
	CHECK(strstr(m, tmp) != NULL);
	CHECK(strstr(m, PENNY_PLUGINDIR) != NULL);
	CHECK(strstr(m, "/../lib/penny") != NULL);
	CHECK(strchr(m, '\n') == NULL);
	pn_plugin_set_path(NULL);
	ret = pn_plugin_load("nosuch", &p);
	CHECK(strstr(pn_errmsg(ret), "PENNY_PLUGIN_PATH (unset)") != NULL);
}

TEST(wrong_abi_no_table_and_wrong_name_are_refused)
{
	char dir[300], f[400], path[400];
	struct pn_plugin *p = NULL;
	int ret;

	pn_plugin_set_path(fakes);
	ret = pn_plugin_load("badabi", &p);
	CHECK_EQ_INT(ret, -ENOEXEC);
	CHECK(strstr(pn_errmsg(ret), "has ABI 7") != NULL);
	ret = pn_plugin_load("nosym", &p);
	CHECK_EQ_INT(ret, -ENOEXEC);
	CHECK(strstr(pn_errmsg(ret), "is not a penny plugin (no penny_plugin_v1)") != NULL);
	/* a file named for another plugin */
	snprintf(dir, sizeof(dir), "%s/c", tmp);
	mkdir(dir, 0755);
	snprintf(f, sizeof(f), "%s/penny-fake.so", fakes);
	snprintf(path, sizeof(path), "%s/penny-cuda.so", dir);
	copy_file(f, path);
	pn_plugin_set_path(dir);
	ret = pn_plugin_load("cuda", &p);
	CHECK_EQ_INT(ret, -ENOEXEC);
	CHECK(strstr(pn_errmsg(ret), "calls itself 'fake', not 'cuda'") != NULL);
	/* not a shared object at all: found, cannot be opened, does not fall through */
	snprintf(path, sizeof(path), "%s/penny-junk.so", dir);
	FILE *j = fopen(path, "w");
	if (j) {
		fputs("not an ELF file\n", j);
		fclose(j);
	}
	ret = pn_plugin_load("junk", &p);
	CHECK_EQ_INT(ret, -ENOEXEC);
	CHECK(strstr(pn_errmsg(ret), "cannot load the junk plugin") != NULL);
	CHECK_EQ_INT(pn_plugin_load("../etc", &p), -EINVAL);
	CHECK_EQ_INT(pn_plugin_load("", &p), -EINVAL);
	/* not a regular file: refused before dlopen, which would block on a FIFO */
	snprintf(path, sizeof(path), "%s/penny-adir.so", dir);
	mkdir(path, 0755);
	ret = pn_plugin_load("adir", &p);
	CHECK_EQ_INT(ret, -ENOEXEC);
	CHECK(strstr(pn_errmsg(ret), "penny-adir.so': not a regular file") != NULL);
	snprintf(path, sizeof(path), "%s/penny-afifo.so", dir);
	if (!mkfifo(path, 0600)) {
		ret = pn_plugin_load("afifo", &p);
		CHECK_EQ_INT(ret, -ENOEXEC);
		CHECK(strstr(pn_errmsg(ret), "penny-afifo.so': not a regular file") != NULL);
	}
}

TEST(plugin_call_errors_carry_the_plugins_message)
{
	struct pn_plugin *p = NULL;
	void *be = NULL;
	int ret;

	pn_plugin_set_path(fakes);
	CHECK_EQ_INT(pn_plugin_load("failinit", &p), 0);
	if (!p)
		return;
	ret = p->ops->init(NULL, 0, &be);
	CHECK(ret < 0);
	ret = pn_plugin_err(p, ret, "init");
	CHECK_STR(pn_errmsg(ret), "failinit plugin: init: fake device is missing");
	pn_plugin_unload(p);
}

TEST(search_directories)
{
	char buf[8192];
	int n;

	pn_plugin_set_path("/x:/y");
	n = pn_plugin_dirs(buf, sizeof(buf));
	CHECK(n >= 4);
	CHECK(!strncmp(buf, "/x:/y:" PENNY_PLUGINDIR ":", strlen("/x:/y:" PENNY_PLUGINDIR ":")));
	pn_plugin_set_path(NULL);
}

/* ---- the data formula ---- */

TEST(fmix32_is_murmurhash3s_finalizer)
{
	CHECK(penny_fmix32(0) == 0);
	CHECK(penny_fmix32(1) == 0x514e28b7u);
	CHECK(penny_fmix32(0xdeadbeefu) == 0x0de5c6a9u);
	CHECK(penny_fmix32(0x12345678u) == 0xe37cd1bcu);
	CHECK(penny_data_hash(7, 2, 5) == 0x6f27cf92u);
	CHECK(penny_data_hash(1, 0, 0) == 0x11fd02ebu);
}

TEST(values_and_expected_results)
{
	uint64_t b;
	int8_t s8;
	int32_t s32;

	/* seed 7, element 0: ranks give -8, 6, -6 (signed) */
	CHECK_EQ_INT((int8_t)penny_data_input_bits(PENNY_INT8, PENNY_SUM, 7, 0, 0), -8);
	CHECK_EQ_INT((int8_t)penny_data_input_bits(PENNY_INT8, PENNY_SUM, 7, 1, 0), 6);
	b = penny_data_expected_bits(PENNY_INT32, PENNY_SUM, 7, 3, 0);
	memcpy(&s32, &b, 4);
	CHECK_EQ_INT(s32, -8);
	b = penny_data_expected_bits(PENNY_INT32, PENNY_AVG, 7, 3, 5); /* -3 / 3 */
	memcpy(&s32, &b, 4);
	CHECK_EQ_INT(s32, -1);
	b = penny_data_expected_bits(PENNY_INT8, PENNY_AVG, 7, 3, 1000); /* -9 / 3 */
	s8 = (int8_t)b;
	CHECK_EQ_INT(s8, -3);
	b = penny_data_expected_bits(PENNY_INT32, PENNY_MIN, 7, 3, 0);
	memcpy(&s32, &b, 4);
	CHECK_EQ_INT(s32, -8);
	b = penny_data_expected_bits(PENNY_INT32, PENNY_MAX, 7, 3, 0);
	memcpy(&s32, &b, 4);
	CHECK_EQ_INT(s32, 6);
	/* prod over 8 ranks at element 0: 1 2 1 -1 1 1 1 -1 = 2 */
	b = penny_data_expected_bits(PENNY_INT32, PENNY_PROD, 7, 8, 0);
	memcpy(&s32, &b, 4);
	CHECK_EQ_INT(s32, 2);
	/* the float types hold the same exact values */
	CHECK(penny_bf16_to_f32((uint16_t)penny_data_expected_bits(PENNY_BFLOAT16, PENNY_SUM, 7, 3, 0)) == -8.0f);
	CHECK(penny_half_to_f32((uint16_t)penny_data_expected_bits(PENNY_HALF, PENNY_MAX, 7, 3, 0)) == 6.0f);
	/* avg of floats: the sum divided in float, rounded once: -8/3 */
	CHECK(penny_bf16_to_f32((uint16_t)penny_data_expected_bits(PENNY_BFLOAT16, PENNY_AVG, 7, 3, 0)) ==
	      penny_bf16_to_f32(penny_f32_to_bf16(-8.0f / 3.0f)));
	b = penny_data_expected_bits(PENNY_FLOAT, PENNY_AVG, 7, 3, 0);
	CHECK((uint32_t)b == penny_f32_bits(-8.0f / 3.0f));
	/* unsigned types: 0..8, never negative, prod 1 or 2 */
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t u = penny_data_input_bits(PENNY_UINT32, PENNY_SUM, 3, 1, i);
		uint64_t p = penny_data_input_bits(PENNY_UINT64, PENNY_PROD, 3, 1, i);

		CHECK(u <= 8);
		CHECK(p == 1 || p == 2);
	}
}

TEST(integer_results_wrap_in_the_type)
{
	/* 2^8 in int8/uint8 wraps to 0 */
	for (uint32_t seed = 0; seed < 2000; seed++) {
		int all2 = 1, r;

		for (r = 0; r < 8; r++)
			all2 &= penny_data_hash(seed, (uint32_t)r, 0) % 8 == 0;
		if (!all2)
			continue;
		CHECK_EQ_INT(penny_data_expected_bits(PENNY_UINT8, PENNY_PROD, seed, 8, 0), 0);
		CHECK_EQ_INT(penny_data_expected_bits(PENNY_INT32, PENNY_PROD, seed, 8, 0), 256);
	}
	CHECK_EQ_INT(penny_data_wrap(PENNY_INT8, 200), -56);
	CHECK_EQ_INT(penny_data_wrap(PENNY_UINT8, -1), 255);
}

TEST(bfloat16_and_half_round_to_nearest_even)
{
	CHECK(penny_f32_to_bf16(1.0f) == 0x3f80);
	CHECK(penny_f32_to_bf16(-2.0f) == 0xc000);
	/* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even -> 1 */
	CHECK(penny_f32_to_bf16(1.00390625f) == 0x3f80);
	/* 1 + 3 * 2^-8: halfway, rounds up to the even 1 + 2^-6 */
	CHECK(penny_f32_to_bf16(1.01171875f) == 0x3f82);
	CHECK(penny_f32_to_half(1.0f) == 0x3c00);
	CHECK(penny_f32_to_half(-8.0f) == 0xc800);
	CHECK(penny_f32_to_half(65504.0f) == 0x7bff);
	CHECK(penny_f32_to_half(65520.0f) == 0x7c00);
	CHECK(penny_f32_to_half(1.0f + 1.0f / 2048) == 0x3c00);	/* halfway, even */
	CHECK(penny_f32_to_half(1.0f + 3.0f / 2048) == 0x3c02);	/* halfway, up */
	CHECK(penny_f32_to_half(5.9604644775390625e-8f) == 0x0001);	/* smallest subnormal */
	CHECK(penny_f32_to_half(2.98023223876953125e-8f) == 0x0000);	/* half of it: even */
	CHECK(penny_half_to_f32(0x0001) == 5.9604644775390625e-8f);
	CHECK(penny_half_to_f32(0x7bff) == 65504.0f);
	CHECK(penny_half_to_f32(0xc800) == -8.0f);
	CHECK(isnan(penny_bf16_to_f32(penny_f32_to_bf16(NAN))));
	CHECK(isnan(penny_half_to_f32(penny_f32_to_half(NAN))));
	/* every half value survives a round trip through float */
	for (uint32_t h = 0; h < 0x10000; h++)
		if ((h & 0x7c00) != 0x7c00)
			CHECK(penny_f32_to_half(penny_half_to_f32((uint16_t)h)) == h);
}

int main(void)
{
	const char *build = getenv("BUILD");

	snprintf(fakes, sizeof(fakes), "%s/tests/plugins", build ? build : "build");
	snprintf(tmp, sizeof(tmp), "%s/penny-plugin-test.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp)) {
		printf("not ok 1 - mkdtemp\n");
		return 1;
	}
	RUN(loads_a_plugin_from_penny_plugin_path);
	RUN(the_test_driver_refuses_a_child_forked_after_it_was_used);
	RUN(first_directory_wins);
	RUN(a_table_of_the_first_v1_size_loads_without_the_appended_members);
	RUN(missing_plugin_is_one_line_naming_the_search);
	RUN(wrong_abi_no_table_and_wrong_name_are_refused);
	RUN(plugin_call_errors_carry_the_plugins_message);
	RUN(search_directories);
	RUN(fmix32_is_murmurhash3s_finalizer);
	RUN(values_and_expected_results);
	RUN(integer_results_wrap_in_the_type);
	RUN(bfloat16_and_half_round_to_nearest_even);
	{
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd))
			printf("# could not remove %s\n", tmp);
	}
	return unit_done();
}
