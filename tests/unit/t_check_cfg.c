/* SPDX-License-Identifier: MIT */
/*
 * penny check's configuration (src/check/check_cfg.c): the table, the
 * parser's every error path ("FILE:LINE: why"), bounds and defaults.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/log.h"
#include "check/check_cfg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static int parse(struct pn_check_cfg *c, const char *text)
{
	return pn_check_cfg_parse(c, text, strlen(text), "t.conf");
}

/* text must be refused with a message containing want */
static void refused(const char *text, const char *want)
{
	struct pn_check_cfg *c = pn_check_cfg_new();
	int ret = parse(c, text);

	CHECK_EQ_INT(ret, -EINVAL);
	if (!strstr(pn_errmsg(ret), want)) {
		printf("#   '%s': message '%s' lacks '%s'\n", text, pn_errmsg(ret), want);
		CHECK(0);
	}
	pn_check_cfg_free(c);
}

TEST(defaults)
{
	struct pn_check_cfg *c = pn_check_cfg_new();
	const char *s;
	double v;

	CHECK_EQ_INT(pn_check_cfg_num(c, "job.median-margin", &v), 0);
	CHECK(v == 0.10);
	CHECK_EQ_INT(pn_check_cfg_num(c, "job.baseline-fraction", &v), 0);
	CHECK(v == 0.9);
	CHECK_EQ_INT(pn_check_cfg_num(c, "inventory.gpus", &v), 0);
	CHECK(isnan(v));
	CHECK_EQ_INT(pn_check_cfg_num(c, "counters.max-increase", &v), 0);
	CHECK(v == 0);
	CHECK_EQ_INT(pn_check_cfg_str(c, "inventory.rail-path", &s), 0);
	CHECK_STR(s, "PXB");
	CHECK_EQ_INT(pn_check_cfg_str(c, "pcie.gpu-speed", &s), 0);
	CHECK_STR(s, "idle-ok");
	/* the wrong type or no such key: a programming error */
	CHECK_EQ_INT(pn_check_cfg_num(c, "pcie.gpu-speed", &v), -EINVAL);
	CHECK_EQ_INT(pn_check_cfg_str(c, "inventory.gpus", &s), -EINVAL);
	CHECK_EQ_INT(pn_check_cfg_num(c, "no.such", &v), -EINVAL);
	pn_check_cfg_free(c);
}

TEST(values)
{
	struct pn_check_cfg *c = pn_check_cfg_new();
	const char *s;
	double v;

	CHECK_EQ_INT(parse(c, "# a comment\n\n  inventory.gpus=8  # eight\r\n"
			   "\tinventory.rail-path = PIX\njob.median-margin = 0\n"
			   "counters.window = 3600"), 0);
	CHECK_EQ_INT(pn_check_cfg_num(c, "inventory.gpus", &v), 1);
	CHECK(v == 8);
	CHECK_EQ_INT(pn_check_cfg_str(c, "inventory.rail-path", &s), 1);
	CHECK_STR(s, "PIX");
	CHECK_EQ_INT(pn_check_cfg_num(c, "job.median-margin", &v), 1);
	CHECK(v == 0);
	CHECK_EQ_INT(pn_check_cfg_num(c, "counters.window", &v), 1);
	CHECK(v == 3600);
	CHECK_EQ_INT(pn_check_cfg_num(c, "inventory.nics", &v), 0);
	pn_check_cfg_free(c);
	c = pn_check_cfg_new();
	CHECK_EQ_INT(parse(c, "inventory.gpus = +4\njob.median-margin = .25\nnic-bw.min-gbps = 1e2\n"
			   "job.require = pcie,nic-bw\n"), 0);
	CHECK_EQ_INT(pn_check_cfg_num(c, "inventory.gpus", &v), 1);
	CHECK(v == 4);
	CHECK_EQ_INT(pn_check_cfg_num(c, "job.median-margin", &v), 1);
	CHECK(v == 0.25);
	CHECK_EQ_INT(pn_check_cfg_num(c, "nic-bw.min-gbps", &v), 1);
	CHECK(v == 100);
	CHECK_EQ_INT(pn_check_cfg_str(c, "job.require", &s), 1);
	CHECK_STR(s, "pcie,nic-bw");
	pn_check_cfg_free(c);
	c = pn_check_cfg_new();
	CHECK_EQ_INT(parse(c, ""), 0);
	pn_check_cfg_free(c);
}

TEST(errors)
{
	refused("inventory.gpus", "t.conf:1: expected 'key = value'");
	refused("\n\n= 3", "t.conf:3: a value without a key");
	refused("no.such = 1", "t.conf:1: unknown key 'no.such'");
	refused("inventory.gpus = 8\ninventory.gpus = 8", "t.conf:2: inventory.gpus is given twice");
	refused("inventory.gpus =", "t.conf:1: inventory.gpus has no value");
	refused("inventory.gpus = eight", "must be a decimal integer, not 'eight'");
	refused("inventory.gpus = 8x", "must be a decimal integer");
	refused("inventory.gpus = nan", "must be a decimal integer");
	refused("inventory.gpus = inf", "must be a decimal integer");
	refused("inventory.gpus = 1e999", "must be a decimal integer");
	/* integers are decimal integers; numbers are decimal */
	refused("inventory.gpus = 2.5", "t.conf:1: inventory.gpus must be a decimal integer, not '2.5'");
	refused("inventory.gpus = 0x2", "must be a decimal integer, not '0x2'");
	refused("inventory.gpus = 2e0", "must be a decimal integer");
	refused("inventory.gpus = +", "must be a decimal integer");
	refused("nic-bw.size = 0x100000", "must be a size in bytes");
	refused("nic-bw.size = 1.5M", "must be a size in bytes");
	refused("settings.job-uid = 4294967295", "must be 0..4294967294, got 4294967295");
	/* integers compared as integers, not rounded to a double at the bound */
	refused("counters.max-increase = 1000000000000000001",
		"must be 0..1000000000000000000, got 1000000000000000001");
	refused("counters.max-increase = 99999999999999999999", "must be 0..1000000000000000000");
	refused("settings.shm-min = 1000000000000000001", "must be 0..1000000000000000000 bytes");
	refused("job.median-margin = 0x0.1p0", "must be a decimal number, not '0x0.1p0'");
	refused("job.median-margin = nan", "must be a decimal number");
	refused("job.median-margin = infinity", "must be a decimal number");
	refused("job.median-margin = 1e999", "must be a decimal number");
	refused("job.median-margin = .", "must be a decimal number");
	/* a list of check names */
	refused("job.require = pcie,bogus", "job.require must be a comma list of inventory pcie");
	refused("job.require = pcie,,nic-bw", "must be a comma list");
	refused("job.require = pcie,", "must be a comma list");
	refused("job.require = ,pcie", "must be a comma list");
	refused("inventory.gpus = -1", "t.conf:1: inventory.gpus must be 0..4096, got -1");
	refused("inventory.gpus = 4097", "must be 0..4096");
	refused("job.median-margin = 1.01", "must be 0..1");
	refused("counters.window = 3601", "must be 0..3600");
	refused("inventory.port-rate = 0", "must be 0.001..1e+06");
	refused("inventory.rail-path = pix", "must be one of PIX PXB PHB NODE SYS, not 'pix'");
	refused("pcie.gpu-speed = lenient", "must be one of idle-ok strict");
	refused("pcie.gpu-speed = idle-ok strict", "must be one of");
}

TEST(bounds)
{
	struct pn_check_cfg *c = pn_check_cfg_new();
	char *big = malloc((1 << 20) + 2), line[600];

	memset(big, '#', (1 << 20) + 1);
	CHECK_EQ_INT(pn_check_cfg_parse(c, big, (1 << 20) + 1, "big"), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "larger than"));
	/* a NUL byte, a line past the buffer, a long string value */
	CHECK_EQ_INT(pn_check_cfg_parse(c, "a\0b", 3, "nul"), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "NUL"));
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = 0;
	CHECK_EQ_INT(parse(c, line), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "t.conf:1: line longer than"));
	memcpy(line, "inventory.rail-path = ", 22);
	line[200] = 0;
	CHECK_EQ_INT(parse(c, line), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "longer than 63"));
	/* a long unknown key is cut in the message, not overflowing it */
	memset(line, 'k', 400);
	strcpy(line + 400, " = 1");
	CHECK_EQ_INT(parse(c, line), -EINVAL);
	CHECK(strlen(pn_errmsg(-EINVAL)) < 200);
	free(big);
	pn_check_cfg_free(c);
}

TEST(load)
{
	struct pn_check_cfg *c = pn_check_cfg_new();
	char path[] = "/tmp/t_check_cfg.XXXXXX";
	int fd = mkstemp(path);
	double v;

	CHECK(fd >= 0);
	CHECK(write(fd, "inventory.nics = 2\nbad\n", 23) == 23);
	close(fd);
	CHECK_EQ_INT(pn_check_cfg_load(c, path), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), ":2: expected"));
	CHECK(strstr(pn_errmsg(-EINVAL), path));
	unlink(path);
	pn_check_cfg_free(c);
	c = pn_check_cfg_new();
	CHECK(pn_check_cfg_load(c, "/dev/null") < 0); /* not a regular file */
	CHECK(pn_check_cfg_load(c, "/nonexistent/x.conf") < 0);
	CHECK_EQ_INT(pn_check_cfg_num(c, "inventory.nics", &v), 0);
	pn_check_cfg_free(c);
}

TEST(table)
{
	size_t n, i, j;
	const struct pn_check_key *k = pn_check_keys(&n);

	CHECK(n >= 9);
	for (i = 0; i < n; i++) {
		CHECK(k[i].key && strchr(k[i].key, '.') && k[i].doc && *k[i].doc);
		if (PN_KEY_IS_NUM(&k[i]))
			CHECK(k[i].min <= k[i].max &&
			      (isnan(k[i].dflt) || (k[i].dflt >= k[i].min && k[i].dflt <= k[i].max)));
		else
			CHECK(!k[i].dflt_str || !k[i].choices || strstr(k[i].choices, k[i].dflt_str));
		for (j = 0; j < i; j++)
			CHECK(strcmp(k[i].key, k[j].key));
	}
}

int main(void)
{
	RUN(defaults);
	RUN(values);
	RUN(errors);
	RUN(bounds);
	RUN(load);
	RUN(table);
	return unit_done();
}
