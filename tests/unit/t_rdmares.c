/* SPDX-License-Identifier: MIT */
/*
 * The RDMA netlink parser of penny top's process view (node/rdmares.h) on
 * synthetic replies: device lists, QP lists grouped per device and owner,
 * kernel owners, QP types, errors, messages cut anywhere, lengths that lie,
 * and the replay file of a sysfs tree with /proc/PID/comm.
 */
#define _GNU_SOURCE
#include "top/gputraffic.h"
#include "node/rdmares.h"
#include "node/sysfs.h"
#include "unit.h"

#include <errno.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned char msgbuf[8192];
static size_t mlen;

/* ---- building replies ---- */

static size_t put_attr(unsigned char *p, uint16_t type, const void *v, size_t len)
{
	struct nlattr a = { .nla_len = (uint16_t)(sizeof(a) + len), .nla_type = type };

	memcpy(p, &a, sizeof(a));
	memcpy(p + sizeof(a), v, len);
	memset(p + sizeof(a) + len, 0, NLA_ALIGN(a.nla_len) - a.nla_len);
	return NLA_ALIGN(a.nla_len);
}

static size_t put_u32(unsigned char *p, uint16_t type, uint32_t v)
{
	return put_attr(p, type, &v, sizeof(v));
}

static size_t put_str(unsigned char *p, uint16_t type, const char *s)
{
	return put_attr(p, type, s, strlen(s) + 1);
}

/* start a message of type t; returns its header's offset */
static size_t msg_start(uint16_t t)
{
	struct nlmsghdr h = { .nlmsg_type = t, .nlmsg_flags = NLM_F_MULTI };
	size_t at = mlen;

	memcpy(msgbuf + mlen, &h, sizeof(h));
	mlen += sizeof(h);
	return at;
}

static void msg_end(size_t at)
{
	uint32_t len = (uint32_t)(mlen - at);

	memcpy(msgbuf + at, &len, sizeof(len));
}

static void dev(uint32_t index, const char *name)
{
	size_t at = msg_start(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET));

	mlen += put_u32(msgbuf + mlen, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	mlen += put_str(msgbuf + mlen, RDMA_NLDEV_ATTR_DEV_NAME, name);
	msg_end(at);
}

struct qp {
	uint32_t pid;		/* 0: kern */
	const char *kern;
	uint8_t type;
};

static void qps(uint32_t index, const char *name, const struct qp *q, int n)
{
	size_t at = msg_start(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET)), tab;
	unsigned char e[256];
	int i;

	mlen += put_u32(msgbuf + mlen, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	mlen += put_str(msgbuf + mlen, RDMA_NLDEV_ATTR_DEV_NAME, name);
	tab = mlen;
	mlen += sizeof(struct nlattr);
	for (i = 0; i < n; i++) {
		size_t el = 0;

		el += put_u32(e + el, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
		el += put_u32(e + el, RDMA_NLDEV_ATTR_RES_LQPN, 100 + (uint32_t)i);
		el += put_attr(e + el, RDMA_NLDEV_ATTR_RES_TYPE, &q[i].type, 1);
		if (q[i].kern)
			el += put_str(e + el, RDMA_NLDEV_ATTR_RES_KERN_NAME, q[i].kern);
		else
			el += put_u32(e + el, RDMA_NLDEV_ATTR_RES_PID, q[i].pid);
		mlen += put_attr(msgbuf + mlen, RDMA_NLDEV_ATTR_RES_QP_ENTRY | NLA_F_NESTED, e, el);
	}
	{
		struct nlattr a = { .nla_len = (uint16_t)(mlen - tab),
				    .nla_type = RDMA_NLDEV_ATTR_RES_QP | NLA_F_NESTED };

		memcpy(msgbuf + tab, &a, sizeof(a));
	}
	msg_end(at);
}

static void done(void)
{
	size_t at = msg_start(NLMSG_DONE);
	int zero = 0;

	memcpy(msgbuf + mlen, &zero, sizeof(zero));
	mlen += sizeof(zero);
	msg_end(at);
}

static void error(int err)
{
	size_t at = msg_start(NLMSG_ERROR);
	struct nlmsgerr e = { .error = -err };

	memcpy(msgbuf + mlen, &e, sizeof(e));
	mlen += sizeof(e);
	msg_end(at);
}

static const struct pn_rdmares_proc *find(const struct pn_rdmares *r, const char *d, uint32_t pid,
					  const char *kern)
{
	int i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->procs[i].dev, d) &&
		    (kern ? r->procs[i].kernel && !strcmp(r->procs[i].comm, kern)
			  : !r->procs[i].kernel && r->procs[i].pid == pid))
			return &r->procs[i];
	return NULL;
}

/* two devices, two processes on both, the kernel's GSI QP */
static void two_devices(void)
{
	static const struct qp a[] = { { 1234, NULL, 2 }, { 1234, NULL, 2 }, { 1234, NULL, 4 },
				       { 0, "ib_core", 1 }, { 77, NULL, 2 } };
	static const struct qp b[] = { { 1234, NULL, 2 }, { 1234, NULL, 9 } };

	mlen = 0;
	dev(0, "mlx5_0");
	dev(3, "rxe0");
	done();
	qps(0, "mlx5_0", a, 5);
	done();
	qps(3, "rxe0", b, 2);
	done();
}

TEST(devices_and_owners)
{
	struct pn_rdmares r;
	const struct pn_rdmares_proc *p;
	char buf[64];
	size_t at;

	two_devices();
	memset(&r, 0, sizeof(r));
	/* the device list, up to its NLMSG_DONE */
	CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf, mlen), 1);
	CHECK_EQ_INT(r.ndevs, 2);
	CHECK_STR(r.devs[1].name, "rxe0");
	CHECK_EQ_INT((int)r.devs[1].index, 3);
	CHECK_EQ_INT(r.n, 0);
	/* then each QP dump as its own datagram */
	at = 0;
	while (at < mlen) {
		struct nlmsghdr h;

		memcpy(&h, msgbuf + at, sizeof(h));
		if (h.nlmsg_type == RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET))
			CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf + at, h.nlmsg_len), 0);
		at += NLMSG_ALIGN(h.nlmsg_len);
	}
	CHECK_EQ_INT(r.nqps, 7);
	CHECK_EQ_INT(r.n, 4);
	p = find(&r, "mlx5_0", 1234, NULL);
	CHECK(p && p->nqps == 3);
	CHECK_STR(pn_rdmares_types(p ? p->types : 0, buf, sizeof(buf)), "RC,UD");
	p = find(&r, "mlx5_0", 0, "ib_core");
	CHECK(p && p->nqps == 1 && p->kernel);
	CHECK_STR(pn_rdmares_types(p ? p->types : 0, buf, sizeof(buf)), "GSI");
	p = find(&r, "rxe0", 1234, NULL);
	CHECK(p && p->nqps == 2);
	CHECK_STR(pn_rdmares_types(p ? p->types : 0, buf, sizeof(buf)), "RC,XRC_INI");
	CHECK(find(&r, "mlx5_0", 77, NULL) && !find(&r, "rxe0", 77, NULL));
	/* the types list cut whole: never half a name */
	CHECK_STR(pn_rdmares_types((1u << 2) | (1u << 4) | (1u << 31), buf, 7), "RC,UD");
	CHECK_STR(pn_rdmares_types(1u << 31, buf, sizeof(buf)), "DRIVER");
	pn_rdmares_release(&r);
}

TEST(errors_and_acks)
{
	struct pn_rdmares r;

	mlen = 0;
	error(EPERM);
	memset(&r, 0, sizeof(r));
	CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf, mlen), -EPERM);
	mlen = 0;
	error(EOPNOTSUPP);
	CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf, mlen), -EOPNOTSUPP);
	/* error 0 is an acknowledgement: go on */
	mlen = 0;
	error(0);
	dev(1, "mlx5_1");
	done();
	CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf, mlen), 1);
	CHECK_EQ_INT(r.ndevs, 1);
	/* nothing at all, or less than a header: nothing read, no error */
	CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf, 0), 0);
	CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf, 10), 0);
	pn_rdmares_release(&r);
}

/* Every prefix of a good reply: an error or fewer QPs, never a read past
 * the end (the bytes are copied to an exact-size buffer: asan sees it). */
TEST(cut_anywhere)
{
	size_t cut;
	int bad = 0;

	two_devices();
	for (cut = 0; cut <= mlen; cut++) {
		struct pn_rdmares r;
		unsigned char *m = malloc(cut ? cut : 1);
		int ret;

		memcpy(m, msgbuf, cut);
		memset(&r, 0, sizeof(r));
		ret = pn_rdmares_parse(&r, m, cut);
		if (ret != 0 && ret != 1 && ret != -EBADMSG)
			bad++;
		if (r.nqps > 7)
			bad++;
		pn_rdmares_release(&r);
		free(m);
	}
	CHECK_EQ_INT(bad, 0);
}

TEST(lengths_that_lie)
{
	struct pn_rdmares r;
	struct nlmsghdr h;
	struct nlattr a;
	uint32_t big;

	/* a message longer than the datagram */
	two_devices();
	memcpy(&h, msgbuf, sizeof(h));
	big = (uint32_t)mlen + 4;
	memcpy(msgbuf, &big, sizeof(big));
	memset(&r, 0, sizeof(r));
	CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf, mlen), -EBADMSG);
	/* shorter than its header */
	big = 8;
	memcpy(msgbuf, &big, sizeof(big));
	CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf, mlen), -EBADMSG);
	/* an attribute longer than its message */
	two_devices();
	memcpy(&a, msgbuf + sizeof(h), sizeof(a));
	a.nla_len = 200;
	memcpy(msgbuf + sizeof(h), &a, sizeof(a));
	CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf, mlen), -EBADMSG);
	/* an attribute shorter than its header */
	a.nla_len = 2;
	memcpy(msgbuf + sizeof(h), &a, sizeof(a));
	CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf, mlen), -EBADMSG);
	CHECK_EQ_INT(r.ndevs, 0);
	pn_rdmares_release(&r);
}

/* A name without its NUL, a u32 of two bytes: cut or ignored. */
TEST(short_payloads)
{
	struct pn_rdmares r;
	size_t at;
	char name[80];
	uint16_t two = 5;

	memset(name, 'x', sizeof(name));
	mlen = 0;
	at = msg_start(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET));
	mlen += put_u32(msgbuf + mlen, RDMA_NLDEV_ATTR_DEV_INDEX, 4);
	mlen += put_attr(msgbuf + mlen, RDMA_NLDEV_ATTR_DEV_NAME, name, sizeof(name));
	msg_end(at);
	at = msg_start(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET));
	mlen += put_attr(msgbuf + mlen, RDMA_NLDEV_ATTR_DEV_INDEX, &two, sizeof(two));
	mlen += put_str(msgbuf + mlen, RDMA_NLDEV_ATTR_DEV_NAME, "short");
	msg_end(at);
	memset(&r, 0, sizeof(r));
	CHECK_EQ_INT(pn_rdmares_parse(&r, msgbuf, mlen), 0);
	CHECK_EQ_INT(r.ndevs, 1);
	CHECK_EQ_INT((int)strlen(r.devs[0].name), 63);
	pn_rdmares_release(&r);
}

/* A replayed root: penny/rdma-nldev and proc/PID/comm of the tree. */
TEST(replay_file_and_comm)
{
	char dir[] = "/tmp/t_rdmares.XXXXXX", path[256];
	struct pn_rdmares r;
	const struct pn_rdmares_proc *p;
	FILE *f;

	CHECK(mkdtemp(dir));
	two_devices();
	snprintf(path, sizeof(path), "%s/penny", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/penny/rdma-nldev", dir);
	f = fopen(path, "wb");
	CHECK(f && fwrite(msgbuf, 1, mlen, f) == mlen);
	fclose(f);
	snprintf(path, sizeof(path), "%s/proc", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/1234", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/1234/comm", dir);
	f = fopen(path, "w");
	CHECK(f && fputs("penny\n", f) >= 0);
	fclose(f);
	CHECK_EQ_INT(pn_sysfs_set_root(dir), 0);
	CHECK_EQ_INT(pn_rdmares_read(&r, 1), 0);
	CHECK_STR(r.note, "");
	CHECK_EQ_INT(r.n, 4);
	p = find(&r, "rxe0", 1234, NULL);
	CHECK(p && !strcmp(p->comm, "penny"));
	p = find(&r, "mlx5_0", 77, NULL);
	CHECK(p && !strcmp(p->comm, "")); /* gone: no comm */
	pn_rdmares_release(&r);
	/* no replay file: a note, no error */
	unlink(path);
	snprintf(path, sizeof(path), "%s/penny/rdma-nldev", dir);
	unlink(path);
	CHECK_EQ_INT(pn_rdmares_read(&r, 1), 0);
	CHECK(strstr(r.note, "no process view: ") == r.note);
	pn_rdmares_release(&r);
	/* an error in the dump: a note */
	mlen = 0;
	error(EPERM);
	f = fopen(path, "wb");
	CHECK(f && fwrite(msgbuf, 1, mlen, f) == mlen);
	fclose(f);
	CHECK_EQ_INT(pn_rdmares_read(&r, 1), 0);
	CHECK(strstr(r.note, "does not allow") != NULL);
	pn_rdmares_release(&r);
	unlink(path);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	CHECK_EQ_INT(system(path), 0);
}

/* The GPU counters' step: growth, a wrap at the value's width, a reset. */
TEST(gpu_counter_steps)
{
	uint64_t d = 99;

	CHECK_EQ_INT((int)pn_gputraffic_delta(100, 250, 64, &d), 0);
	CHECK(d == 150);
	CHECK_EQ_INT((int)pn_gputraffic_delta(UINT32_MAX - 9, 5, 32, &d), PN_GT_WRAP);
	CHECK(d == 15);
	CHECK_EQ_INT((int)pn_gputraffic_delta(UINT64_MAX - 1, 3, 64, &d), PN_GT_WRAP);
	CHECK(d == 5);
	/* down by a little: the driver reloaded, no increase */
	CHECK_EQ_INT((int)pn_gputraffic_delta(1000000, 10, 64, &d), PN_GT_RESET);
	CHECK(d == 0);
	CHECK_EQ_INT((int)pn_gputraffic_delta(1000000, 10, 32, &d), PN_GT_RESET);
	/* a 32-bit value above its width cannot have wrapped */
	CHECK_EQ_INT((int)pn_gputraffic_delta(1ull << 40, 10, 32, &d), PN_GT_RESET);
}

int main(void)
{
	RUN(devices_and_owners);
	RUN(errors_and_acks);
	RUN(cut_anywhere);
	RUN(lengths_that_lie);
	RUN(short_payloads);
	RUN(replay_file_and_comm);
	RUN(gpu_counter_steps);
	return unit_done();
}
