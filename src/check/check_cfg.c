/* SPDX-License-Identifier: MIT */
/*
 * The configuration of `penny check` (check/check_cfg.h): the one table
 * of keys (type, range, default, documentation) and the parser of
 * "key = value" files.  A number key whose default is NAN has none: the
 * check derives its expectation (topology, baseline) instead.
 */
#include "check/check_cfg.h"
#include "base/file.h"
#include "base/log.h"
#include "base/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A config file is a few dozen lines: refuse anything much larger. */
#define CFG_MAX_BYTES (1 << 20)
#define CFG_VAL_LEN 64

/*
 * check-core's keys first; check-net and check-gpu append theirs at the
 * end.  Keep the doc one line: `penny check --list-keys` prints it and the
 * man page test compares the names.
 */
static const struct pn_check_key keys[] = {
	{ "inventory.gpus", PN_KEY_INT, 0, 4096, NAN, NULL,
	  "GPUs the node must have (default: any number, reported)", NULL },
	{ "inventory.nics", PN_KEY_INT, 0, 4096, NAN, NULL,
	  "RDMA devices the node must have (default: any number, reported)", NULL },
	{ "inventory.rail-path", PN_KEY_TEXT, 0, 0, 0, "PXB",
	  "worst acceptable PCIe path from a GPU to its nearest NIC", "PIX PXB PHB NODE SYS" },
	{ "inventory.port-rate", PN_KEY_NUM, 0.001, 1e6, NAN, NULL,
	  "Gb/s every port must run at (default: the node's fastest port of its link layer)",
	  NULL },
	{ "pcie.gpu-speed", PN_KEY_TEXT, 0, 0, 0, "idle-ok",
	  "a GPU's lowered link speed: idle-ok (GPUs slow their link when idle) or strict",
	  "idle-ok strict" },
	{ "counters.max-increase", PN_KEY_INT, 0, 1e18, 0, NULL,
	  "how much a port's error counters may rise during the run", NULL },
	{ "counters.window", PN_KEY_NUM, 0, 3600, 0, NULL,
	  "seconds the counters check watches at least (from before the first check)", NULL },
	{ "job.median-margin", PN_KEY_NUM, 0, 1, 0.10, NULL,
	  "under a launcher: fail a result this fraction below its group's job median", NULL },
	{ "job.require", PN_KEY_LIST, 0, 0, 0, NULL,
	  "checks whose SKIP is a FAIL (comma list; --require adds to it)",
	  "inventory pcie counters nic-bw gpu-copy allreduce rails settings nccl-path ranks alltoall" },
	{ "job.baseline-fraction", PN_KEY_NUM, 1e-6, 1, 0.9, NULL,
	  "with --baseline: the fraction of the baseline's figure a result must reach", NULL },
	/* check-net: nic-bw, rails */
	{ "nic-bw.fraction", PN_KEY_NUM, 1e-6, 1, 0.9, NULL,
	  "fraction of the port rate every NIC must send at", NULL },
	{ "nic-bw.min-gbps", PN_KEY_NUM, 0, 1e5, NAN, NULL,
	  "Gb/s every NIC must send at (overrides the fraction of the port rate)", NULL },
	{ "nic-bw.size", PN_KEY_SIZE, 1, 1 << 30, 1 << 20, NULL, "bytes per RDMA write", NULL },
	{ "nic-bw.seconds", PN_KEY_NUM, 0.1, 600, 2, NULL,
	  "seconds each NIC sends (--quick: a quarter, at least 0.2)", NULL },
	{ "rails.noise-bytes", PN_KEY_SIZE, 0, 1e15, 1 << 20, NULL,
	  "bytes a NIC may carry outside the plan (background traffic)", NULL },
	{ "rails.size", PN_KEY_SIZE, 4096, 1 << 30, 16 << 20, NULL,
	  "bytes of each allreduce over the plan (4 of them; --quick: a quarter)", NULL },
	/* check-gpu: gpu-copy, allreduce */
	{ "gpu-copy.fraction", PN_KEY_NUM, 1e-6, 1, 0.7, NULL,
	  "host<->device copies: fraction of the GPU's PCIe path rate at its max", NULL },
	{ "gpu-copy.nvlink-fraction", PN_KEY_NUM, 1e-6, 1, 0.7, NULL,
	  "GPU-to-GPU copies over NVLink: fraction of NVLinks x 26.56 GB/s", NULL },
	{ "gpu-copy.sm-fraction", PN_KEY_NUM, 1e-6, 1, 0.5, NULL,
	  "a GPU's copy within its memory by its own kernels: fraction of the node's median "
	  "(one GPU: of its copy engines' copy)", NULL },
	{ "gpu-copy.size", PN_KEY_SIZE, 4096, 1073741824, 67108864, NULL,
	  "bytes per copy (--quick: the same, 5 copies instead of 20)", NULL },
	{ "allreduce.copy-efficiency", PN_KEY_NUM, 1e-6, 2, 0.75, NULL,
	  "fraction of the node's slowest GPU-to-GPU copy (GB/s) its allreduce busbw must reach",
	  NULL },
	{ "allreduce.efficiency", PN_KEY_NUM, 1e-6, 1, 0.6, NULL,
	  "fraction of the busbw ring-plan predicts for the node's topology, where no GPU copy "
	  "was measured", NULL },
	{ "allreduce.size", PN_KEY_SIZE, 4, 4294967296.0, 134217728, NULL,
	  "bytes of the judged allreduce (the full check also runs 1/16 and 1/4 of it)", NULL },
	{ "allreduce.min-busbw", PN_KEY_NUM, 0, 1e6, NAN, NULL,
	  "busbw (GB/s) the allreduce must reach, instead of the prediction", NULL },
	/* alltoall */
	{ "alltoall.size", PN_KEY_SIZE, 4096, 1 << 30, 1 << 20, NULL,
	  "bytes each way of every pair exchange, and from each rank in the job's all-to-all "
	  "(--quick: a quarter)", NULL },
	{ "alltoall.iters", PN_KEY_INT, 5, 10000, 10, NULL,
	  "timed exchanges per pair of ranks, over 5 blocks (--quick: half, at least 5)", NULL },
	{ "alltoall.efficiency", PN_KEY_NUM, 1e-6, 1, 0.5, NULL,
	  "over verbs: fraction of the slower NIC's port rate every pair exchange must reach",
	  NULL },
	{ "alltoall.min-gbps", PN_KEY_NUM, 0, 1e6, NAN, NULL,
	  "Gb/s every pair exchange must reach each way (instead of the topology's)", NULL },
	{ "alltoall.pair-margin", PN_KEY_NUM, 0, 1, 0.5, NULL,
	  "fail a pair exchange this fraction below the job's median of its link (leaf, spine)",
	  NULL },
	{ "alltoall.min-busbw", PN_KEY_NUM, 0, 1e6, NAN, NULL,
	  "busbw (GB/s) the job's all-to-all must reach", NULL },
	/* settings */
	{ "settings.acs", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "ACS redirect on a switch port above a GPU or NIC: fail, or allow (a PASS that says so)",
	  "fail allow" },
	{ "settings.iommu-dma", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "a GPU's or NIC's IOMMU domain translating DMA: fail, or allow (a VM that needs it)",
	  "fail allow" },
	{ "settings.gpudirect-rdma", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "no nvidia_peermem and no dma-buf with GPUs and RDMA NICs: fail, or allow",
	  "fail allow" },
	{ "settings.memlock-min", PN_KEY_SIZE, 0, 1e18, NAN, NULL,
	  "bytes of locked memory (soft RLIMIT_MEMLOCK) enough (default: unlimited required)",
	  NULL },
	{ "settings.shm-min", PN_KEY_SIZE, 0, 1e18, 1073741824, NULL,
	  "bytes the tmpfs at /dev/shm must hold at least", NULL },
	{ "settings.versions", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "a driver older than NCCL's CUDA needs (nccl-path's versions): fail, or allow",
	  "fail allow" },
	{ "settings.nccl-rail", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "NCCL sending over a NIC other than the GPU's rail (nccl-path): fail, or allow",
	  "fail allow" },
	{ "settings.fabric-manager", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "NVSwitches without a running fabric manager: fail, or allow", "fail allow" },
	{ "settings.imex", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "an MNNVL node's IMEX node list, daemon or channel0 missing or closed: fail, or allow",
	  "fail allow" },
	{ "settings.job-uid", PN_KEY_INT, 0, 4294967294.0, NAN, NULL,
	  "the user id that runs jobs, for imex-channel (default: penny's; root: any user)",
	  NULL },
	{ "settings.roce-v1", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "a RoCE port without a RoCE v2 GID: fail, or allow", "fail allow" },
	{ "settings.roce-ecn", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "a RoCE port whose ECN (roce_np and roce_rp) is not on for one priority: fail, or allow",
	  "fail allow" },
	{ "settings.roce-pfc", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "a RoCE port with PFC on no priority, or on none that ECN covers: fail, or allow",
	  "fail allow" },
	{ "settings.pci-hidden", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "a GPU or NIC whose /sys link does not reach a PCI root bus: fail, or allow",
	  "fail allow" },
	{ "settings.nvlink-down", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "an NVLink NVML reports down: fail, or allow", "fail allow" },
	{ "settings.p2p", PN_KEY_TEXT, 0, 0, 0, "fail",
	  "a GPU pair whose P2P read or write NVML does not report OK: fail, or allow",
	  "fail allow" },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

struct pn_check_cfg {
	int set[NKEYS];
	double num[NKEYS];
	char str[NKEYS][CFG_VAL_LEN];
};

const struct pn_check_key *pn_check_keys(size_t *n)
{
	*n = NKEYS;
	return keys;
}

const char *pn_check_key_text(const struct pn_check_key *k, char *dflt, size_t dlen,
			      char *range, size_t rlen)
{
	const char *nf = k->type == PN_KEY_INT ? "%.0f" : "%g";
	char fmt[16];

	if (!PN_KEY_IS_NUM(k)) {
		snprintf(range, rlen, "%s%s", k->type == PN_KEY_LIST ? "comma list of: " : "",
			 k->choices ? k->choices : "text");
		snprintf(dflt, dlen, "%s", k->dflt_str ? k->dflt_str : "none");
		return "string";
	}
	snprintf(fmt, sizeof(fmt), "%s..%s", nf, nf);
	snprintf(range, rlen, fmt, k->min, k->max);
	if (isnan(k->dflt))
		snprintf(dflt, dlen, "none");
	else
		snprintf(dflt, dlen, nf, k->dflt);
	return k->type == PN_KEY_INT ? "integer" : "number";
}

struct pn_check_cfg *pn_check_cfg_new(void)
{
	struct pn_check_cfg *c = calloc(1, sizeof(*c));

	if (!c)
		pn_err(-ENOMEM, "out of memory for the check configuration");
	return c;
}

void pn_check_cfg_free(struct pn_check_cfg *c)
{
	free(c);
}

static int find_key(const char *key, size_t len)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		if (strlen(keys[i].key) == len && !memcmp(keys[i].key, key, len))
			return (int)i;
	return -1;
}

/* Is the word w one of the space-separated choices? */
static int is_choice(const char *choices, const char *w)
{
	size_t n = strlen(w);
	const char *p = choices;

	while (*p) {
		size_t k = strcspn(p, " ");

		if (k == n && !memcmp(p, w, n))
			return 1;
		p += k;
		while (*p == ' ')
			p++;
	}
	return 0;
}

/*
 * Only decimal notation, which strtod checks further: no hex ("0x2"), inf
 * or nan that strtod would also take; an integer is a sign and digits.
 */
static int is_decimal(const char *v, int integer)
{
	if (!integer)
		return v[strspn(v, "+-.0123456789eE")] == 0;
	if (*v == '+' || *v == '-')
		v++;
	return *v && v[strspn(v, "0123456789")] == 0;
}

/* Is v a comma list of choices ("nic-bw,pcie"), no word empty? */
static int is_choice_list(const char *choices, const char *v)
{
	char w[CFG_VAL_LEN];

	for (;;) {
		size_t k = strcspn(v, ",");

		if (!k || k >= sizeof(w))
			return 0;
		memcpy(w, v, k);
		w[k] = 0;
		if (!is_choice(choices, w))
			return 0;
		if (!v[k])
			return 1;
		v += k + 1;
	}
}

static int set_value(struct pn_check_cfg *c, int k, const char *v, const char *name, int line)
{
	const struct pn_check_key *d = &keys[k];

	if (!*v)
		return pn_err(-EINVAL, "%s:%d: %s has no value", name, line, d->key);
	/* integers are compared as integers: a double rounds 10^18 + 1 to 10^18
	 * (every bound is an integer a double holds exactly) */
	if (d->type == PN_KEY_SIZE) {
		uint64_t u;

		if (pn_parse_size(v, &u))
			return pn_err(-EINVAL, "%s:%d: %s must be a size in bytes (4096, 64K, 1GiB), "
					       "not '%s'", name, line, d->key, v);
		if (u < (uint64_t)d->min || u > (uint64_t)d->max)
			return pn_err(-EINVAL, "%s:%d: %s must be %.0f..%.0f bytes, got %s", name,
				      line, d->key, d->min, d->max, v);
		c->num[k] = (double)u;
	} else if (d->type == PN_KEY_INT) {
		long long i;

		if (!is_decimal(v, 1))
			return pn_err(-EINVAL, "%s:%d: %s must be a decimal integer, not '%s'", name,
				      line, d->key, v);
		errno = 0;
		i = strtoll(v, NULL, 10);
		if (errno || i < (long long)d->min || i > (long long)d->max)
			return pn_err(-EINVAL, "%s:%d: %s must be %.0f..%.0f, got %s", name, line,
				      d->key, d->min, d->max, v);
		c->num[k] = (double)i;
	} else if (PN_KEY_IS_NUM(d)) {
		char *end;
		double x;

		errno = 0;
		x = strtod(v, &end);
		if (!is_decimal(v, 0) || end == v || *end || errno || !isfinite(x))
			return pn_err(-EINVAL, "%s:%d: %s must be a decimal number, not '%s'", name,
				      line, d->key, v);
		if (x < d->min || x > d->max)
			return pn_err(-EINVAL, "%s:%d: %s must be %g..%g, got %s", name, line, d->key,
				      d->min, d->max, v);
		c->num[k] = x;
	} else {
		if (strlen(v) >= CFG_VAL_LEN)
			return pn_err(-EINVAL, "%s:%d: %s: value longer than %d characters", name,
				      line, d->key, CFG_VAL_LEN - 1);
		if (d->type == PN_KEY_LIST && !is_choice_list(d->choices, v))
			return pn_err(-EINVAL, "%s:%d: %s must be a comma list of %s, not '%s'",
				      name, line, d->key, d->choices, v);
		if (d->choices && d->type != PN_KEY_LIST && !is_choice(d->choices, v))
			return pn_err(-EINVAL, "%s:%d: %s must be one of %s, not '%s'", name, line,
				      d->key, d->choices, v);
		strcpy(c->str[k], v);
	}
	c->set[k] = 1;
	return 0;
}

/* One line (NUL-terminated, no newline): blank, comment, or key = value. */
static int parse_line(struct pn_check_cfg *c, char *s, const char *name, int line)
{
	char *eq, *key, *val, *e;
	int k;

	e = strchr(s, '#');
	if (e)
		*e = 0;
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	if (!*s)
		return 0;
	eq = strchr(s, '=');
	if (!eq)
		return pn_err(-EINVAL, "%s:%d: expected 'key = value'", name, line);
	key = s;
	e = eq;
	while (e > key && isspace((unsigned char)e[-1]))
		e--;
	if (e == key)
		return pn_err(-EINVAL, "%s:%d: a value without a key", name, line);
	*e = 0;
	val = eq + 1;
	while (isspace((unsigned char)*val))
		val++;
	k = find_key(key, strlen(key));
	if (k < 0)
		return pn_err(-EINVAL, "%s:%d: unknown key '%.64s' (see penny check --list-keys)",
			      name, line, key);
	if (c->set[k])
		return pn_err(-EINVAL, "%s:%d: %s is given twice", name, line, keys[k].key);
	return set_value(c, k, val, name, line);
}

int pn_check_cfg_parse(struct pn_check_cfg *c, const char *text, size_t len, const char *name)
{
	char buf[512];
	size_t i = 0;
	int line = 0, ret;

	if (len > CFG_MAX_BYTES)
		return pn_err(-EINVAL, "%s: larger than %d bytes: not a check configuration", name,
			      CFG_MAX_BYTES);
	if (memchr(text, 0, len))
		return pn_err(-EINVAL, "%s: a NUL byte: not a text file", name);
	/* an editor's UTF-8 byte order mark is no part of the first key */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		text += 3, len -= 3;
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;

		line++;
		if (n >= sizeof(buf))
			return pn_err(-EINVAL, "%s:%d: line longer than %zu characters", name, line,
				      sizeof(buf) - 1);
		memcpy(buf, text + i, n);
		buf[n] = 0;
		if (n && buf[n - 1] == '\r')
			buf[n - 1] = 0;
		ret = parse_line(c, buf, name, line);
		if (ret)
			return ret;
		i += n + 1;
	}
	return 0;
}

int pn_check_cfg_load(struct pn_check_cfg *c, const char *path)
{
	char *buf;
	size_t len;
	int ret = pn_file_read(path, &buf, &len);

	if (ret)
		return ret;
	ret = pn_check_cfg_parse(c, buf, len, path);
	free(buf);
	return ret;
}

static int lookup(const char *key, int is_num)
{
	int k = find_key(key, strlen(key));

	if (k < 0 || !PN_KEY_IS_NUM(&keys[k]) != !is_num)
		return pn_err(-EINVAL, "check configuration: no %s key '%s'",
			      is_num ? "number" : "string", key);
	return k;
}

int pn_check_cfg_num(const struct pn_check_cfg *c, const char *key, double *v)
{
	int k = lookup(key, 1);

	if (k < 0)
		return k;
	*v = c && c->set[k] ? c->num[k] : keys[k].dflt;
	return c && c->set[k];
}

int pn_check_cfg_str(const struct pn_check_cfg *c, const char *key, const char **v)
{
	int k = lookup(key, 0);

	if (k < 0)
		return k;
	*v = c && c->set[k] ? c->str[k] : keys[k].dflt_str;
	return c && c->set[k];
}
