/* SPDX-License-Identifier: MIT */
/* The collectives' names, buffers, in-place conventions and nccl-tests' sizes (collkind.h). */
#include "engine/collkind.h"
#include "base/log.h"

#include <errno.h>
#include <string.h>

static const char *const coll_names[PN_NCOLLS] = {
	[PN_COLL_ALLREDUCE] = "allreduce",	   [PN_COLL_ALLGATHER] = "allgather",
	[PN_COLL_REDUCE_SCATTER] = "reducescatter", [PN_COLL_ALLTOALL] = "alltoall",
	[PN_COLL_BROADCAST] = "broadcast",	   [PN_COLL_REDUCE] = "reduce",
	[PN_COLL_SENDRECV] = "sendrecv",
};

static const char *const calgo_names[PN_NCALGOS] = {
	[PN_CALGO_RING] = "ring",	  [PN_CALGO_ONE_SHOT] = "one-shot",
	[PN_CALGO_PAIRWISE] = "pairwise", [PN_CALGO_BRUCK] = "bruck",
	[PN_CALGO_TREE] = "tree",
};

/* Bit a of valid[k]: collective k has algorithm a. */
#define B(a) (1u << (a))
static const unsigned valid[PN_NCOLLS] = {
	[PN_COLL_ALLGATHER] = B(PN_CALGO_RING) | B(PN_CALGO_ONE_SHOT),
	[PN_COLL_REDUCE_SCATTER] = B(PN_CALGO_RING) | B(PN_CALGO_ONE_SHOT),
	[PN_COLL_ALLTOALL] = B(PN_CALGO_ONE_SHOT) | B(PN_CALGO_PAIRWISE) | B(PN_CALGO_BRUCK),
	[PN_COLL_BROADCAST] = B(PN_CALGO_RING) | B(PN_CALGO_ONE_SHOT) | B(PN_CALGO_TREE),
	[PN_COLL_REDUCE] = B(PN_CALGO_RING) | B(PN_CALGO_ONE_SHOT),
	[PN_COLL_SENDRECV] = B(PN_CALGO_ONE_SHOT),
};
#undef B

const char *pn_coll_name(enum pn_coll_kind k)
{
	return k >= 0 && k < PN_NCOLLS ? coll_names[k] : "?";
}

int pn_coll_parse(const char *s, enum pn_coll_kind *k)
{
	char flat[32];
	size_t i, n = 0;
	int c;

	/* all_gather, all-gather, AllGather: the same collective */
	for (i = 0; s[i] && n + 1 < sizeof(flat); i++)
		if (s[i] != '_' && s[i] != '-')
			flat[n++] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
	flat[n] = 0;
	for (c = 0; !s[i] && c < PN_NCOLLS; c++) /* !s[i]: all of s was read */
		if (!strcmp(flat, coll_names[c])) {
			*k = (enum pn_coll_kind)c;
			return 0;
		}
	return pn_err(-EINVAL, "unknown collective '%s' (allreduce, allgather, reducescatter, "
		      "alltoall, broadcast, reduce, sendrecv)", s);
}

const char *pn_calgo_name(enum pn_calgo a)
{
	if (a == PN_CALGO_AUTO)
		return "auto";
	return a >= 0 && a < PN_NCALGOS ? calgo_names[a] : "?";
}

int pn_calgo_parse(const char *s, enum pn_calgo *a)
{
	int i;

	if (!strcmp(s, "auto")) {
		*a = PN_CALGO_AUTO;
		return 0;
	}
	for (i = 0; i < PN_NCALGOS; i++)
		if (!strcmp(s, calgo_names[i])) {
			*a = (enum pn_calgo)i;
			return 0;
		}
	return pn_err(-EINVAL, "unknown algorithm '%s' (ring, one-shot, pairwise, bruck, tree, "
		      "auto)", s);
}

int pn_calgo_valid(enum pn_coll_kind k, enum pn_calgo a)
{
	return k >= 0 && k < PN_NCOLLS && a >= 0 && a < PN_NCALGOS && (valid[k] >> a & 1u);
}

int pn_coll_reduces(enum pn_coll_kind k)
{
	return k == PN_COLL_ALLREDUCE || k == PN_COLL_REDUCE_SCATTER || k == PN_COLL_REDUCE;
}

int pn_coll_rooted(enum pn_coll_kind k)
{
	return k == PN_COLL_BROADCAST || k == PN_COLL_REDUCE;
}

size_t pn_coll_send_count(enum pn_coll_kind k, size_t count, int nranks)
{
	return k == PN_COLL_REDUCE_SCATTER || k == PN_COLL_ALLTOALL ? count * (size_t)nranks
								     : count;
}

size_t pn_coll_recv_count(enum pn_coll_kind k, size_t count, int nranks)
{
	return k == PN_COLL_ALLGATHER || k == PN_COLL_ALLTOALL ? count * (size_t)nranks : count;
}

size_t pn_coll_inplace_send_off(enum pn_coll_kind k, size_t count, int rank)
{
	return k == PN_COLL_ALLGATHER ? count * (size_t)rank : 0;
}

size_t pn_coll_inplace_recv_off(enum pn_coll_kind k, size_t count, int rank)
{
	return k == PN_COLL_REDUCE_SCATTER ? count * (size_t)rank : 0;
}

/* Whether nccl-tests' size of k is the whole buffer of all ranks' parts. */
static int size_is_total(enum pn_coll_kind k)
{
	return k == PN_COLL_ALLGATHER || k == PN_COLL_REDUCE_SCATTER || k == PN_COLL_ALLTOALL;
}

double pn_coll_algbw_bytes(enum pn_coll_kind k, size_t count, size_t esize, int nranks)
{
	double b = (double)count * (double)esize;

	return size_is_total(k) ? b * nranks : b;
}

size_t pn_coll_count_for_bytes(enum pn_coll_kind k, size_t bytes, size_t esize, int nranks)
{
	size_t n = esize ? bytes / esize : 0;

	return size_is_total(k) && nranks > 0 ? n / (size_t)nranks : n;
}

double pn_coll_bus_factor(enum pn_coll_kind k, int nranks)
{
	double n = nranks;

	if (nranks < 1)
		return 0;
	switch (k) {
	case PN_COLL_ALLREDUCE:
		return 2.0 * (n - 1) / n;
	case PN_COLL_ALLGATHER:
	case PN_COLL_REDUCE_SCATTER:
	case PN_COLL_ALLTOALL:
		return (n - 1) / n;
	default:
		return 1.0;
	}
}
