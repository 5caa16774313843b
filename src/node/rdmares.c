/* SPDX-License-Identifier: MIT */
/*
 * QP owners per RDMA device from the RDMA netlink resource dump (the bounded
 * parser, the socket exchange with its deadline, the replay file) and their
 * command names.
 */
#define _GNU_SOURCE
#include "node/rdmares.h"
#include "node/sysfs.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG_DEV_GET RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET)
#define MSG_QP_GET RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET)
#define ALIGN4(x) (((x) + 3u) & ~3u)
#define DRIVER_BIT 31

static const char *const type_names[] = {
	[0] = "SMI", [1] = "GSI", [2] = "RC", [3] = "UC", [4] = "UD", [5] = "RAW_IPV6",
	[6] = "RAW_ETHERTYPE", [8] = "RAW_PACKET", [9] = "XRC_INI", [10] = "XRC_TGT",
};

const char *pn_rdmares_type_name(int t)
{
	if (t == DRIVER_BIT)
		return "DRIVER";
	if (t < 0 || t >= (int)PN_ARRAY_SIZE(type_names))
		return NULL;
	return type_names[t];
}

const char *pn_rdmares_types(uint32_t types, char *buf, size_t len)
{
	size_t at = 0;
	int t;

	if (len)
		buf[0] = 0;
	for (t = 0; t < 32 && len; t++) {
		const char *n = pn_rdmares_type_name(t);
		int w;

		if (!(types & (1u << t)))
			continue;
		w = n ? snprintf(buf + at, len - at, "%s%s", at ? "," : "", n)
		      : snprintf(buf + at, len - at, "%s%d", at ? "," : "", t);
		if (w < 0 || (size_t)w >= len - at) {
			buf[at] = 0; /* whole names only */
			break;
		}
		at += (size_t)w;
	}
	return buf;
}

/* ---- the parser: every length checked before it is used ---- */

struct attr {
	const unsigned char *p;	/* payload */
	size_t len;
};

/* Attributes of [p, p + len) by type (up to max), the last of a type wins. */
static int attrs(const unsigned char *p, size_t len, struct attr *tb, int max)
{
	memset(tb, 0, sizeof(*tb) * (size_t)max);
	while (len >= sizeof(struct nlattr)) {
		struct nlattr a;
		size_t step;

		memcpy(&a, p, sizeof(a));
		if (a.nla_len < sizeof(a) || a.nla_len > len)
			return -EBADMSG;
		step = ALIGN4((size_t)a.nla_len);
		if ((a.nla_type & NLA_TYPE_MASK) < max) {
			tb[a.nla_type & NLA_TYPE_MASK].p = p + sizeof(a);
			tb[a.nla_type & NLA_TYPE_MASK].len = a.nla_len - sizeof(a);
		}
		if (step >= len)
			break;
		p += step;
		len -= step;
	}
	return 0;
}

static int get_u32(const struct attr *a, uint32_t *v)
{
	if (!a->p || a->len < sizeof(*v))
		return 0;
	memcpy(v, a->p, sizeof(*v));
	return 1;
}

static int get_u8(const struct attr *a, uint8_t *v)
{
	if (!a->p || a->len < 1)
		return 0;
	*v = a->p[0];
	return 1;
}

/* A string attribute into buf: at most its length, up to its NUL. */
static int get_str(const struct attr *a, char *buf, size_t len)
{
	size_t n = 0;

	if (!a->p || !len)
		return 0;
	while (n < a->len && n + 1 < len && a->p[n])
		n++;
	memcpy(buf, a->p, n);
	buf[n] = 0;
	return 1;
}

static struct pn_rdmares_proc *owner(struct pn_rdmares *r, uint32_t pid, const char *kern)
{
	struct pn_rdmares_proc *p;
	int i;

	for (i = r->n - 1; i >= 0; i--) {
		p = &r->procs[i];
		if (strcmp(p->dev, r->cur_dev))
			continue;
		if (kern ? p->kernel && !strcmp(p->comm, kern) : !p->kernel && p->pid == pid)
			return p;
	}
	if (r->n >= PN_RDMARES_MAX_PROCS)
		return NULL;
	if (r->n == r->cap) {
		int cap = r->cap ? 2 * r->cap : 8;
		struct pn_rdmares_proc *np = realloc(r->procs, (size_t)cap * sizeof(*np));

		if (!np)
			return NULL;
		r->procs = np;
		r->cap = cap;
	}
	p = &r->procs[r->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->dev, sizeof(p->dev), "%s", r->cur_dev);
	p->pid = pid;
	p->kernel = !!kern;
	if (kern)
		snprintf(p->comm, sizeof(p->comm), "%s", kern);
	return p;
}

static int qp_entry(struct pn_rdmares *r, const unsigned char *p, size_t len)
{
	struct attr tb[RDMA_NLDEV_ATTR_RES_KERN_NAME + 1];
	char kern[64] = "";
	uint32_t pid = 0;
	uint8_t type = 0;
	struct pn_rdmares_proc *o;
	int have_type, ret;

	ret = attrs(p, len, tb, (int)PN_ARRAY_SIZE(tb));
	if (ret)
		return ret;
	have_type = get_u8(&tb[RDMA_NLDEV_ATTR_RES_TYPE], &type);
	if (!get_u32(&tb[RDMA_NLDEV_ATTR_RES_PID], &pid) &&
	    !get_str(&tb[RDMA_NLDEV_ATTR_RES_KERN_NAME], kern, sizeof(kern)))
		snprintf(kern, sizeof(kern), "?");
	r->nqps++;
	o = owner(r, pid, kern[0] ? kern : NULL);
	if (!o) {
		r->dropped++;
		return r->n >= PN_RDMARES_MAX_PROCS ? 0 : -ENOMEM;
	}
	o->nqps++;
	if (have_type)
		o->types |= type < 31 ? 1u << type : 1u << DRIVER_BIT;
	return 0;
}

static int message(struct pn_rdmares *r, const struct nlmsghdr *h, const unsigned char *p,
		   size_t len)
{
	struct attr tb[RDMA_NLDEV_ATTR_RES_QP + 1];
	uint32_t index = 0;
	char name[64] = "";
	int ret, i;

	ret = attrs(p, len, tb, (int)PN_ARRAY_SIZE(tb));
	if (ret)
		return ret;
	get_str(&tb[RDMA_NLDEV_ATTR_DEV_NAME], name, sizeof(name));
	if (h->nlmsg_type == MSG_DEV_GET) {
		if (!get_u32(&tb[RDMA_NLDEV_ATTR_DEV_INDEX], &index) || !name[0])
			return 0;
		for (i = 0; i < r->ndevs; i++)
			if (r->devs[i].index == index)
				return 0;
		if (r->ndevs < PN_RDMARES_MAX_DEVS) {
			r->devs[r->ndevs].index = index;
			snprintf(r->devs[r->ndevs].name, sizeof(r->devs[0].name), "%s", name);
			r->ndevs++;
		}
		return 0;
	}
	if (name[0])
		snprintf(r->cur_dev, sizeof(r->cur_dev), "%s", name);
	if (!r->cur_dev[0] || !tb[RDMA_NLDEV_ATTR_RES_QP].p)
		return 0;
	/* the table: a run of RES_QP_ENTRY nests */
	p = tb[RDMA_NLDEV_ATTR_RES_QP].p;
	len = tb[RDMA_NLDEV_ATTR_RES_QP].len;
	while (len >= sizeof(struct nlattr)) {
		struct nlattr a;
		size_t step;

		memcpy(&a, p, sizeof(a));
		if (a.nla_len < sizeof(a) || a.nla_len > len)
			return -EBADMSG;
		if ((a.nla_type & NLA_TYPE_MASK) == RDMA_NLDEV_ATTR_RES_QP_ENTRY) {
			ret = qp_entry(r, p + sizeof(a), a.nla_len - sizeof(a));
			if (ret)
				return ret;
		}
		step = ALIGN4((size_t)a.nla_len);
		if (step >= len)
			break;
		p += step;
		len -= step;
	}
	return 0;
}

/* all: a replay file's several dumps, each with its NLMSG_DONE */
static int parse(struct pn_rdmares *r, const void *buf, size_t len, int all)
{
	const unsigned char *p = buf;

	while (len >= sizeof(struct nlmsghdr)) {
		struct nlmsghdr h;
		size_t step;
		int ret;

		memcpy(&h, p, sizeof(h));
		if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len)
			return -EBADMSG;
		if (h.nlmsg_type == NLMSG_DONE && !all)
			return 1;
		if (h.nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr e;

			if (h.nlmsg_len < sizeof(h) + sizeof(e.error))
				return -EBADMSG;
			memcpy(&e.error, p + sizeof(h), sizeof(e.error));
			if (e.error < 0 && e.error > -4096)
				return e.error;
			if (e.error)
				return -EBADMSG;
			/* an acknowledgement */
		} else if (h.nlmsg_type == MSG_DEV_GET || h.nlmsg_type == MSG_QP_GET) {
			ret = message(r, &h, p + sizeof(h), h.nlmsg_len - sizeof(h));
			if (ret)
				return ret;
		}
		step = NLMSG_ALIGN((size_t)h.nlmsg_len);
		if (step >= len)
			break;
		p += step;
		len -= step;
	}
	return 0;
}

int pn_rdmares_parse(struct pn_rdmares *r, const void *buf, size_t len)
{
	return parse(r, buf, len, 0);
}

void pn_rdmares_comms(struct pn_rdmares *r)
{
	int i;

	for (i = 0; i < r->n; i++) {
		struct pn_rdmares_proc *p = &r->procs[i];
		char buf[sizeof(p->comm)];
		int n;

		if (p->kernel)
			continue;
		p->comm[0] = 0;
		n = pn_sys_read(buf, sizeof(buf), "/proc/%u/comm", p->pid);
		if (n > 0) {
			buf[strcspn(buf, "\n")] = 0;
			snprintf(p->comm, sizeof(p->comm), "%s", buf);
		}
	}
}

/* ---- the socket ---- */

#define RECV_BUF 65536
#define MAX_DATAGRAMS 100000

struct req {
	struct nlmsghdr h;
	struct nlattr a;
	uint32_t index;
};

static int dump(struct pn_rdmares *r, int fd, uint16_t type, int dev_index, uint32_t seq,
		uint64_t deadline, unsigned char *buf)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct req q;
	size_t qlen = sizeof(q.h);
	int i, ret;

	memset(&q, 0, sizeof(q));
	q.h.nlmsg_type = type;
	q.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	q.h.nlmsg_seq = seq;
	if (dev_index >= 0) {
		q.a.nla_len = sizeof(q.a) + sizeof(q.index);
		q.a.nla_type = RDMA_NLDEV_ATTR_DEV_INDEX;
		q.index = (uint32_t)dev_index;
		qlen = sizeof(q);
	}
	q.h.nlmsg_len = (uint32_t)qlen;
	if (sendto(fd, &q, qlen, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (i = 0; i < MAX_DATAGRAMS; i++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = pn_now_ns();
		ssize_t n;

		if (now >= deadline)
			return -ETIMEDOUT;
		ret = poll(&pfd, 1, pn_poll_ms((double)(deadline - now) / 1e9, 1000));
		if (ret < 0 && errno != EINTR)
			return -errno;
		if (ret <= 0)
			continue;
		n = recv(fd, buf, RECV_BUF, MSG_TRUNC | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return -errno;
		if (n > RECV_BUF)
			return -EMSGSIZE;
		ret = pn_rdmares_parse(r, buf, (size_t)n);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	return -E2BIG;
}

static void why(struct pn_rdmares *r, int err, const char *what)
{
	if (err == -EPROTONOSUPPORT || err == -EAFNOSUPPORT)
		snprintf(r->note, sizeof(r->note),
			 "no process view: this kernel has no RDMA netlink (ib_core not loaded)");
	else if (err == -EPERM || err == -EACCES)
		snprintf(r->note, sizeof(r->note),
			 "no process view: the kernel does not allow reading %s (%s)", what,
			 strerror(-err));
	else if (err == -EOPNOTSUPP || err == -EINVAL)
		snprintf(r->note, sizeof(r->note),
			 "no process view: this kernel cannot list %s over RDMA netlink", what);
	else
		snprintf(r->note, sizeof(r->note), "no process view: reading %s: %s", what,
			 strerror(-err));
}

static int read_live(struct pn_rdmares *r, double timeout)
{
	uint64_t deadline = pn_now_ns() + (uint64_t)((timeout > 0 && timeout < 3600 ? timeout : 5) * 1e9);
	unsigned char *buf;
	int fd, ret, i, ndevs;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0) {
		why(r, -errno, "RDMA resources");
		return 0;
	}
	buf = malloc(RECV_BUF);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	ret = dump(r, fd, MSG_DEV_GET, -1, 1, deadline, buf);
	if (ret == -ENOMEM)
		goto out;
	if (ret) {
		why(r, ret, "the RDMA devices");
		ret = 0;
		goto out;
	}
	ndevs = r->ndevs;
	for (i = 0; i < ndevs; i++) {
		snprintf(r->cur_dev, sizeof(r->cur_dev), "%s", r->devs[i].name);
		ret = dump(r, fd, MSG_QP_GET, (int)r->devs[i].index, 2 + (uint32_t)i, deadline, buf);
		if (ret == -ENOMEM)
			goto out;
		if (ret) {
			why(r, ret, "the QPs");
			ret = 0;
			goto out;
		}
	}
	ret = 0;
out:
	free(buf);
	close(fd);
	return ret;
}

static int read_replay(struct pn_rdmares *r)
{
	unsigned char *buf = malloc(1 << 20);
	ssize_t n = 0, got;
	int fd, ret;

	if (!buf)
		return -ENOMEM;
	fd = pn_sys_open(O_RDONLY, "%s", PN_RDMARES_REPLAY);
	if (fd < 0) {
		snprintf(r->note, sizeof(r->note),
			 "no process view: a replayed sysfs root has no RDMA netlink (no %s)",
			 &PN_RDMARES_REPLAY[1]);
		free(buf);
		return 0;
	}
	while (n < (1 << 20) && (got = read(fd, buf + n, (size_t)((1 << 20) - n))) > 0)
		n += got;
	close(fd);
	ret = parse(r, buf, (size_t)n, 1);
	free(buf);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0)
		why(r, ret, &PN_RDMARES_REPLAY[1]);
	return 0;
}

int pn_rdmares_read(struct pn_rdmares *r, double timeout)
{
	int ret;

	memset(r, 0, sizeof(*r));
	ret = pn_sysfs_is_live() ? read_live(r, timeout) : read_replay(r);
	if (ret)
		return ret;
	if (!r->note[0] && !r->ndevs && !r->n)
		snprintf(r->note, sizeof(r->note), "no process view: no RDMA devices");
	pn_rdmares_comms(r);
	return 0;
}

void pn_rdmares_release(struct pn_rdmares *r)
{
	free(r->procs);
	r->procs = NULL;
	r->n = 0;
}
