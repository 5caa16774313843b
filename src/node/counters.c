/* SPDX-License-Identifier: MIT */
/*
 * Per-port traffic counters, the model: enumerating RDMA ports, netdevs and
 * remote InfiniBand ports, reading their counters and computing rates.  The
 * background thread that samples a set is sampler.c.
 */
#define _GNU_SOURCE
#include "node/counters.h"
#include "base/log.h"
#include "node/nic.h"
#include "node/perfquery.h"
#include "node/sysfs.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NET_CLASS "/sys/class/net"
/* a data counter may move this much of the line's capacity in an interval */
#define PLAUSIBLE_LINE 1.1

/* Counters whose meaning penny knows, in display order. */
static const struct known_ctr {
	const char *name;
	uint8_t kind;
	uint8_t scale;
	uint8_t width; /* saturating width of IB PortCounters error fields */
} ib_known[] = {
	{ "port_rcv_data", PN_CK_RX_BYTES, 4, 0 },
	{ "port_xmit_data", PN_CK_TX_BYTES, 4, 0 },
	{ "port_rcv_packets", PN_CK_RX_PKTS, 1, 0 },
	{ "port_xmit_packets", PN_CK_TX_PKTS, 1, 0 },
	{ "unicast_rcv_packets", PN_CK_OTHER, 1, 0 },
	{ "unicast_xmit_packets", PN_CK_OTHER, 1, 0 },
	{ "multicast_rcv_packets", PN_CK_OTHER, 1, 0 },
	{ "multicast_xmit_packets", PN_CK_OTHER, 1, 0 },
	{ "symbol_error", PN_CK_ERR, 1, 16 },
	{ "link_error_recovery", PN_CK_ERR, 1, 8 },
	{ "link_downed", PN_CK_ERR, 1, 8 },
	{ "port_rcv_errors", PN_CK_ERR, 1, 16 },
	{ "port_rcv_remote_physical_errors", PN_CK_ERR, 1, 16 },
	{ "port_rcv_switch_relay_errors", PN_CK_ERR, 1, 16 },
	{ "port_xmit_discards", PN_CK_DISC, 1, 16 },
	{ "port_xmit_constraint_errors", PN_CK_ERR, 1, 8 },
	{ "port_rcv_constraint_errors", PN_CK_ERR, 1, 8 },
	{ "local_link_integrity_errors", PN_CK_ERR, 1, 4 },
	{ "excessive_buffer_overrun_errors", PN_CK_ERR, 1, 4 },
	{ "VL15_dropped", PN_CK_ERR, 1, 16 },
	{ "port_xmit_wait", PN_CK_OTHER, 1, 0 },
}, net_known[] = {
	{ "rx_bytes", PN_CK_RX_BYTES, 1, 0 },
	{ "tx_bytes", PN_CK_TX_BYTES, 1, 0 },
	{ "rx_packets", PN_CK_RX_PKTS, 1, 0 },
	{ "tx_packets", PN_CK_TX_PKTS, 1, 0 },
	{ "rx_errors", PN_CK_ERR, 1, 0 }, /* the other *_errors are parts of these */
	{ "tx_errors", PN_CK_ERR, 1, 0 },
	{ "rx_dropped", PN_CK_DISC, 1, 0 },
	{ "tx_dropped", PN_CK_DISC, 1, 0 },
};

struct pn_counters_io {
	int fd_state, fd_phys, fd_rate;
	int fd[PN_COUNTERS_MAX];
};

static const char *const group_names[PN_CG_COUNT] = { "counters", "hw_counters", "statistics",
						      "mad" };

const char *pn_counters_group_name(int group)
{
	return group >= 0 && group < PN_CG_COUNT ? group_names[group] : "?";
}

const char *pn_port_type_name(int type)
{
	switch (type) {
	case PN_PT_RDMA:
		return "rdma";
	case PN_PT_NETDEV:
		return "netdev";
	case PN_PT_REMOTE:
		return "remote";
	}
	return "?";
}

static uint64_t clock_ns(const struct pn_counters_set *s)
{
	return s->cfg.clock_ns ? s->cfg.clock_ns() : pn_now_ns();
}

void pn_counters_cfg_init(struct pn_counters_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->hold_files = 1;
}

int pn_counters_set_init(struct pn_counters_set *s, const struct pn_counters_cfg *cfg)
{
	memset(s, 0, sizeof(*s));
	if (cfg)
		s->cfg = *cfg;
	else
		pn_counters_cfg_init(&s->cfg);
	s->owner = 1;
	return 0;
}

/* ---- counter arithmetic ---- */

/* a + b, UINT64_MAX when the sum does not fit */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void pn_counters_update(struct pn_counter *c, int ok, uint64_t raw, uint64_t max_raw)
{
	int had = c->flags & PN_CF_VALID;
	uint64_t prev = c->raw, d = 0, max;
	uint32_t f;

	c->rate = NAN;
	c->delta = 0;
	if (!ok) {
		c->flags = 0; /* the next good reading is a new baseline */
		return;
	}
	f = PN_CF_VALID;
	max = c->width ? (c->width >= 64 ? UINT64_MAX : (1ull << c->width) - 1) : 0;
	if (had) {
		if (raw >= prev) {
			int pinned = max ? raw == max
					 : (c->group == PN_CG_IB || c->group == PN_CG_MAD) &&
						   raw == UINT32_MAX;

			if (pinned && raw == prev) {
				f |= PN_CF_SAT; /* stuck at its maximum: nothing to count */
			} else {
				d = raw - prev;
				f |= PN_CF_DELTA | (pinned ? PN_CF_SAT : 0);
			}
			/* more than the line can carry: not traffic of this interval */
			if (max_raw && d > max_raw) {
				d = 0;
				f = (f & ~(uint32_t)PN_CF_DELTA) | PN_CF_JUMP;
			}
		} else {
			/*
			 * Went down: reset (perfquery -R, a driver restart).  No
			 * counter penny reads wraps: the legacy 32-bit PortCounters
			 * saturate at their maximum, PortCountersExtended,
			 * hw_counters and netdev statistics are 64-bit.  It counts
			 * from zero, as far as the line could carry.
			 */
			d = raw;
			c->wraps = 0;
			f |= PN_CF_RESET | PN_CF_DELTA;
			if (max_raw && d > max_raw) {
				d = 0;
				f &= ~(uint32_t)PN_CF_DELTA;
			}
		}
		/* more units than 64 bits hold (a line of unknown rate bounds
		 * nothing): not traffic of this interval, never a wrapped delta */
		if ((f & PN_CF_DELTA) && c->scale && d > UINT64_MAX / c->scale) {
			d = 0;
			f = (f & ~(uint32_t)PN_CF_DELTA) | (raw >= prev ? PN_CF_JUMP : 0);
		}
	}
	c->raw = raw;
	c->delta = d * c->scale;
	c->value = sat_add(raw, (uint64_t)c->wraps << 32);
	c->value = c->scale && c->value > UINT64_MAX / c->scale ? UINT64_MAX : c->value * c->scale;
	c->flags = f;
}

double pn_counters_util(double Bps, double line_Bps)
{
	double u;

	if (!(line_Bps > 0) || !isfinite(line_Bps) || isnan(Bps))
		return NAN;
	u = Bps / line_Bps;
	return u < 0 ? 0 : u > 1 ? 1 : u;
}

void pn_counters_hist(const struct pn_counters_port *p, int i, double *rx, double *tx)
{
	int k = (p->hist_head - p->hist_n + i + 2 * PN_COUNTERS_HIST) % PN_COUNTERS_HIST;

	*rx = p->hist_rx[k];
	*tx = p->hist_tx[k];
}

static void hist_push(struct pn_counters_port *p, double rx, double tx)
{
	p->hist_rx[p->hist_head] = (float)rx;
	p->hist_tx[p->hist_head] = (float)tx;
	p->hist_head = (p->hist_head + 1) % PN_COUNTERS_HIST;
	if (p->hist_n < PN_COUNTERS_HIST)
		p->hist_n++;
}

/* ---- ports and their counters ---- */

int pn_counters_port_cmp(const struct pn_counters_port *a, const struct pn_counters_port *b)
{
	int c;

	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->type == PN_PT_REMOTE && a->lid != b->lid)
		return a->lid < b->lid ? -1 : 1;
	c = pn_natcmp(a->dev, b->dev);
	if (c)
		return c;
	return a->port < b->port ? -1 : a->port > b->port;
}

static int port_qsort(const void *a, const void *b)
{
	return pn_counters_port_cmp(a, b);
}

static const struct known_ctr *find_known(const struct known_ctr *t, size_t n, const char *name,
					  int *index)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(t[i].name, name)) {
			*index = (int)i;
			return &t[i];
		}
	*index = (int)n;
	return NULL;
}

static int contains(const char *s, const char *w)
{
	return strstr(s, w) != NULL;
}

static int ends_with(const char *s, const char *w)
{
	size_t ls = strlen(s), lw = strlen(w);

	return ls >= lw && !strcmp(s + ls - lw, w);
}

/* Kind of a driver-specific hw_counters/ entry, from its name. */
static int hw_kind(const char *name)
{
	if (!strcmp(name, "out_of_buffer") || contains(name, "discard") || contains(name, "drop"))
		return PN_CK_DISC;
	/* flush "errors" are normal when a QP is torn down with work queued */
	if ((ends_with(name, "_err") || ends_with(name, "_error") || ends_with(name, "_errors")) &&
	    !contains(name, "flush"))
		return PN_CK_ERR;
	return PN_CK_OTHER;
}

static int known_order(const struct pn_counter *c)
{
	int idx;

	if (c->group == PN_CG_IB || c->group == PN_CG_MAD)
		find_known(ib_known, PN_ARRAY_SIZE(ib_known), c->name, &idx);
	else if (c->group == PN_CG_NET)
		find_known(net_known, PN_ARRAY_SIZE(net_known), c->name, &idx);
	else
		idx = 0;
	return idx;
}

static int ctr_qsort(const void *pa, const void *pb)
{
	const struct pn_counter *a = pa, *b = pb;
	int ka, kb;

	if (a->group != b->group)
		return a->group < b->group ? -1 : 1;
	ka = known_order(a);
	kb = known_order(b);
	if (ka != kb)
		return ka < kb ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* What a port keeps first when it has more counters than PN_COUNTERS_MAX. */
static int keep_rank(int kind)
{
	if (kind == PN_CK_ERR || kind == PN_CK_DISC)
		return 2; /* what check judges */
	return kind == PN_CK_OTHER ? 0 : 1;
}

static void left_out(struct pn_counters_port *p, const struct pn_counter *c)
{
	p->nleft_out++;
	if (keep_rank(c->kind) == 2)
		p->nleft_out_err++;
	PN_DBG(PN_LOG_NIC, "%s: more than %d counters, '%s' left out", p->name, PN_COUNTERS_MAX,
	       c->name);
}

/*
 * Add a counter.  A port with more than PN_COUNTERS_MAX keeps error and
 * discard counters first, then data counters, and counts what it left out
 * (nleft_out, nleft_out_err): nothing is dropped without a word.
 */
static struct pn_counter *add_ctr(struct pn_counters_port *p, int group, const char *name)
{
	const struct known_ctr *k = NULL;
	struct pn_counter nc, *c;
	int idx, i, victim = -1;

	if (strlen(name) >= sizeof(c->name))
		return NULL;
	memset(&nc, 0, sizeof(nc));
	snprintf(nc.name, sizeof(nc.name), "%s", name);
	nc.group = (uint8_t)group;
	nc.scale = 1;
	nc.rate = NAN;
	if (group == PN_CG_IB || group == PN_CG_MAD)
		k = find_known(ib_known, PN_ARRAY_SIZE(ib_known), name, &idx);
	else if (group == PN_CG_NET)
		k = find_known(net_known, PN_ARRAY_SIZE(net_known), name, &idx);
	if (k) {
		nc.kind = k->kind;
		nc.scale = k->scale;
		nc.width = k->width;
	} else if (group == PN_CG_HW) {
		nc.kind = (uint8_t)hw_kind(name);
	}
	if (p->nctr < PN_COUNTERS_MAX) {
		c = &p->ctr[p->nctr++];
		*c = nc;
		return c;
	}
	/* full: the new one takes the place of one that matters less, if any */
	for (i = 0; i < p->nctr; i++)
		if (keep_rank(p->ctr[i].kind) < keep_rank(nc.kind) &&
		    (victim < 0 || keep_rank(p->ctr[i].kind) < keep_rank(p->ctr[victim].kind)))
			victim = i;
	if (victim < 0) {
		left_out(p, &nc);
		return NULL;
	}
	left_out(p, &p->ctr[victim]);
	p->ctr[victim] = nc;
	return &p->ctr[victim];
}

/* Add every file of a directory as a counter of group: how many, or -1
 * when the directory is there but could not be listed now (out of
 * descriptors or memory: worth another try, unlike a missing one). */
static int add_dir(struct pn_counters_port *p, int group, const char *dir)
{
	struct dirent *de;
	DIR *d = pn_sys_opendir("%s", dir);
	int n = 0;

	if (!d)
		return errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == EAGAIN ||
				       errno == EINTR ? -1 : 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (group == PN_CG_HW && !strcmp(de->d_name, "lifespan"))
			continue; /* a setting in ms, not a counter */
		if (add_ctr(p, group, de->d_name))
			n++;
	}
	closedir(d);
	return n;
}

static void index_counters(struct pn_counters_port *p)
{
	int i, k;

	qsort(p->ctr, (size_t)p->nctr, sizeof(p->ctr[0]), ctr_qsort);
	for (k = 0; k < PN_CK_COUNT; k++)
		p->ix[k] = -1;
	p->data_group = -1;
	for (i = 0; i < p->nctr; i++) {
		const struct pn_counter *c = &p->ctr[i];

		if ((c->kind == PN_CK_RX_BYTES || c->kind == PN_CK_TX_BYTES) && p->data_group < 0)
			p->data_group = c->group;
	}
	for (i = 0; i < p->nctr; i++) {
		const struct pn_counter *c = &p->ctr[i];
		int data = c->kind >= PN_CK_RX_BYTES && c->kind <= PN_CK_TX_PKTS;

		if (p->ix[c->kind] >= 0 || (data && c->group != p->data_group))
			continue;
		p->ix[c->kind] = i;
	}
}

static struct pn_counters_port *new_port(struct pn_counters_set *s)
{
	struct pn_counters_port *p;
	int i;

	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 8;
		struct pn_counters_port *np = realloc(s->ports, (size_t)cap * sizeof(*np));

		if (!np)
			return NULL;
		s->ports = np;
		s->cap = cap;
	}
	p = &s->ports[s->n];
	memset(p, 0, offsetof(struct pn_counters_port, ctr));
	p->io = calloc(1, sizeof(*p->io));
	if (!p->io)
		return NULL;
	p->io->fd_state = p->io->fd_phys = p->io->fd_rate = -1;
	for (i = 0; i < PN_COUNTERS_MAX; i++)
		p->io->fd[i] = -1;
	p->state = -1;
	p->lid = -1;
	p->data_group = -1;
	p->rx_Bps = p->tx_Bps = p->rx_pps = p->tx_pps = p->util = NAN;
	s->n++;
	return p;
}

static void io_close(struct pn_counters_io *io)
{
	int i;

	if (!io)
		return;
	if (io->fd_state >= 0)
		close(io->fd_state);
	if (io->fd_phys >= 0)
		close(io->fd_phys);
	if (io->fd_rate >= 0)
		close(io->fd_rate);
	io->fd_state = io->fd_phys = io->fd_rate = -1;
	for (i = 0; i < PN_COUNTERS_MAX; i++) {
		if (io->fd[i] >= 0)
			close(io->fd[i]);
		io->fd[i] = -1;
	}
}

static void drop_port(struct pn_counters_set *s, int i)
{
	io_close(s->ports[i].io);
	free(s->ports[i].io);
	s->n--;
	if (i < s->n)
		memmove(&s->ports[i], &s->ports[i + 1], (size_t)(s->n - i) * sizeof(s->ports[0]));
}

/*
 * An RDMA port's counter files, listed afresh (a port listed before starts
 * over: no rate until its next sample).  A directory that could not be
 * listed marks the port, and the next scan lists them again: else a port
 * added while the process was out of descriptors had no counters for good.
 */
static void rdma_counters(struct pn_counters_port *p)
{
	char dir[PATH_MAX];
	int again;

	io_close(p->io);
	p->nctr = p->nleft_out = p->nleft_out_err = 0;
	snprintf(dir, sizeof(dir), PN_IB_CLASS "/%s/ports/%d/counters", p->dev, p->port);
	again = add_dir(p, PN_CG_IB, dir) < 0;
	snprintf(dir, sizeof(dir), PN_IB_CLASS "/%s/ports/%d/hw_counters", p->dev, p->port);
	again |= add_dir(p, PN_CG_HW, dir) < 0;
	index_counters(p);
	/* RoCE without counters/ (soft-RoCE): bytes and packets of the netdev */
	if (p->data_group < 0 && p->netdev[0]) {
		snprintf(dir, sizeof(dir), NET_CLASS "/%s/statistics", p->netdev);
		again |= add_dir(p, PN_CG_NET, dir) < 0;
		index_counters(p);
	}
	p->unlisted = again;
	PN_DBG(PN_LOG_NIC, "%s: %d counters, bytes from %s%s", p->name, p->nctr,
	       p->data_group < 0 ? "nowhere" : pn_counters_group_name(p->data_group),
	       again ? " (a directory could not be listed: again at the next scan)" : "");
}

static int add_rdma_port(struct pn_counters_set *s, const char *dev, int port)
{
	struct pn_port info;
	struct pn_counters_port *p;
	int ret;

	if (strlen(dev) >= sizeof(p->dev))
		return 0;
	ret = pn_port_read(dev, port, &info);
	if (ret)
		return 0; /* vanished meanwhile */
	p = new_port(s);
	if (!p)
		return pn_err(-ENOMEM, "out of memory");
	p->type = PN_PT_RDMA;
	p->port = port;
	snprintf(p->dev, sizeof(p->dev), "%s", dev);
	snprintf(p->name, sizeof(p->name), "%s/%d", dev, port);
	snprintf(p->link_layer, sizeof(p->link_layer), "%s", info.link_layer);
	snprintf(p->netdev, sizeof(p->netdev), "%s", info.netdev);
	rdma_counters(p);
	return 1;
}

static int add_netdev(struct pn_counters_set *s, const char *ifname)
{
	struct pn_counters_port *p;
	char dir[PATH_MAX];

	if (strlen(ifname) >= sizeof(p->netdev))
		return 0;
	p = new_port(s);
	if (!p)
		return pn_err(-ENOMEM, "out of memory");
	p->type = PN_PT_NETDEV;
	snprintf(p->dev, sizeof(p->dev), "%s", ifname);
	snprintf(p->name, sizeof(p->name), "%s", ifname);
	snprintf(p->netdev, sizeof(p->netdev), "%s", ifname);
	snprintf(p->link_layer, sizeof(p->link_layer), "Ethernet");
	snprintf(dir, sizeof(dir), NET_CLASS "/%s/statistics", ifname);
	add_dir(p, PN_CG_NET, dir);
	index_counters(p);
	return 1;
}

static int add_remote(struct pn_counters_set *s, int lid, int port)
{
	struct pn_counters_port *p = new_port(s);
	int f;

	if (!p)
		return pn_err(-ENOMEM, "out of memory");
	p->type = PN_PT_REMOTE;
	p->lid = lid;
	p->port = port;
	snprintf(p->dev, sizeof(p->dev), "lid:%d", lid);
	snprintf(p->name, sizeof(p->name), "lid:%d/%d", lid, port);
	snprintf(p->link_layer, sizeof(p->link_layer), "InfiniBand");
	for (f = 0; f < PN_PERFQUERY_NFIELDS; f++)
		add_ctr(p, PN_CG_MAD, pn_perfquery_field_name(f));
	index_counters(p);
	return 1;
}

static int find_port(const struct pn_counters_set *s, int type, const char *dev, int port)
{
	int i;

	for (i = 0; i < s->n; i++) {
		const struct pn_counters_port *p = &s->ports[i];

		if (p->type == type && p->port == port && !strcmp(p->dev, dev))
			return i;
	}
	return -1;
}

/* marks[i] = 1 for ports seen in this scan */
static int see(struct pn_counters_set *s, char **marks, int *mcap, int i)
{
	if (*mcap < s->cap) {
		char *nm = realloc(*marks, (size_t)s->cap);

		if (!nm)
			return pn_err(-ENOMEM, "out of memory");
		memset(nm + *mcap, 0, (size_t)(s->cap - *mcap));
		*marks = nm;
		*mcap = s->cap;
	}
	(*marks)[i] = 1;
	return 0;
}

/*
 * Devices come and go as a whole: one readdir of the class per sample.  A
 * device already known (same name, same directory inode) keeps its ports;
 * ports/ of a new one is read once.
 */
static int scan_rdma(struct pn_counters_set *s, char **marks, int *mcap)
{
	struct dirent *de, *pe;
	DIR *d, *pd;
	int ret = 0, ndevs = 0;

	d = pn_sys_opendir(PN_IB_CLASS);
	if (!d)
		return 0; /* no RDMA devices (any more) */
	while (!ret && (de = readdir(d))) {
		int known = 0, i, nports;

		if (de->d_name[0] == '.')
			continue;
		/* memory and time (a scan is devices x ports) bounded by the tree */
		if (++ndevs > PN_COUNTERS_MAX_DEVS) {
			ret = pn_err(-E2BIG, "%s has more than %d RDMA devices", PN_IB_CLASS,
				     PN_COUNTERS_MAX_DEVS);
			break;
		}
		for (i = 0; i < s->n && !ret; i++) {
			struct pn_counters_port *p = &s->ports[i];

			if (p->type == PN_PT_RDMA && p->dev_ino == (uint64_t)de->d_ino &&
			    !strcmp(p->dev, de->d_name)) {
				known = 1;
				if (p->unlisted)
					rdma_counters(p);
				ret = see(s, marks, mcap, i);
			}
		}
		if (known)
			continue;
		/* new, or replaced under the same name: the old ports are dropped */
		pd = pn_sys_opendir(PN_IB_CLASS "/%s/ports", de->d_name);
		nports = 0;
		while (!ret && pd && (pe = readdir(pd))) {
			char canon[16];
			int port;

			/* port 1 is "1": "01", "+1" or "0x1" would read ports/1 again */
			if (pn_parse_int(pe->d_name, &port) || port <= 0 ||
			    (snprintf(canon, sizeof(canon), "%d", port), strcmp(canon, pe->d_name)))
				continue;
			/* as penny topo (pn_nic_read): memory bounded by the tree */
			if (++nports > PN_NIC_MAX_PORTS) {
				ret = pn_err(-E2BIG, "RDMA device '%s' has more than %d ports",
					     de->d_name, PN_NIC_MAX_PORTS);
				break;
			}
			ret = add_rdma_port(s, de->d_name, port);
			if (ret <= 0)
				continue;
			ret = 0;
			s->added++;
			s->ports[s->n - 1].dev_ino = (uint64_t)de->d_ino;
			ret = see(s, marks, mcap, s->n - 1);
		}
		if (pd)
			closedir(pd);
	}
	closedir(d);
	return ret;
}

static int scan_net(struct pn_counters_set *s, char **marks, int *mcap)
{
	struct dirent *de;
	DIR *d = pn_sys_opendir(NET_CLASS);
	int ret = 0, ndevs = 0;

	if (!d)
		return 0;
	while (!ret && (de = readdir(d))) {
		int i;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "lo"))
			continue;
		if (++ndevs > PN_COUNTERS_MAX_DEVS) {
			ret = pn_err(-E2BIG, "%s has more than %d network devices", NET_CLASS,
				     PN_COUNTERS_MAX_DEVS);
			break;
		}
		i = find_port(s, PN_PT_NETDEV, de->d_name, 0);
		if (i < 0) {
			ret = add_netdev(s, de->d_name);
			if (ret <= 0)
				continue;
			ret = 0;
			s->added++;
			i = s->n - 1;
		}
		ret = see(s, marks, mcap, i);
	}
	closedir(d);
	return ret;
}

static int scan(struct pn_counters_set *s)
{
	char *marks = NULL;
	int mcap = 0, ret = 0, i;

	s->added = s->removed = 0;
	if (s->seq == 0) {
		for (i = 0; i < s->cfg.nremote && !ret; i++)
			if (add_remote(s, s->cfg.remote[i].lid, s->cfg.remote[i].port) > 0)
				s->added++;
	}
	if (!ret)
		ret = scan_rdma(s, &marks, &mcap);
	if (!ret && s->cfg.ethernet)
		ret = scan_net(s, &marks, &mcap);
	if (ret)
		goto out;
	for (i = s->n - 1; i >= 0; i--) {
		if (s->ports[i].type == PN_PT_REMOTE || (i < mcap && marks[i]))
			continue;
		PN_DBG(PN_LOG_NIC, "%s went away", s->ports[i].name);
		drop_port(s, i);
		s->removed++;
	}
	if (s->added)
		qsort(s->ports, (size_t)s->n, sizeof(s->ports[0]), port_qsort);
out:
	free(marks);
	return ret;
}

/* ---- reading ---- */

static void drop_all_files(struct pn_counters_set *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		io_close(s->ports[i].io);
}

/*
 * Read a small file through a held descriptor (pread at offset 0 makes sysfs
 * regenerate the value).  A descriptor of a file that went away is reopened
 * once; when the process runs out of descriptors the set stops holding them.
 * path may be NULL while *fd is open: -EBADF then asks for it.
 */
static int held_read(struct pn_counters_set *s, int *fd, char *buf, size_t len, const char *path)
{
	int reopened = 0;
	ssize_t n;

again:
	if (*fd < 0) {
		int f;

		if (!path)
			return -EBADF;
		f = pn_sys_open(O_RDONLY, "%s", path);

		if ((f == -EMFILE || f == -ENFILE) && s->cfg.hold_files) {
			PN_DBG(PN_LOG_NIC, "out of file descriptors: no longer holding counter files");
			s->cfg.hold_files = 0;
			drop_all_files(s);
			f = pn_sys_open(O_RDONLY, "%s", path);
		}
		if (f < 0)
			return f;
		*fd = f;
		reopened = 1;
	}
	n = pread(*fd, buf, len - 1, 0);
	if (n < 0) {
		int e = errno;

		close(*fd);
		*fd = -1;
		if (!reopened && (e == ENODEV || e == ESTALE || e == ENOENT)) {
			reopened = 1;
			if (!path)
				return -EBADF;
			goto again;
		}
		return -e;
	}
	if (!s->cfg.hold_files) {
		close(*fd);
		*fd = -1;
	}
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = 0;
	return (int)n;
}

int pn_counters_parse_value(const char *s, uint64_t *v)
{
	unsigned long long x;
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno)
		return -errno;
	while (isspace((unsigned char)*end))
		end++;
	if (*end)
		return -EINVAL;
	*v = x;
	return 0;
}

static void ctr_path(const struct pn_counters_port *p, const struct pn_counter *c, char *buf, size_t len)
{
	switch (c->group) {
	case PN_CG_IB:
		snprintf(buf, len, PN_IB_CLASS "/%s/ports/%d/counters/%s", p->dev, p->port,
			 c->name);
		break;
	case PN_CG_HW:
		snprintf(buf, len, PN_IB_CLASS "/%s/ports/%d/hw_counters/%s", p->dev, p->port,
			 c->name);
		break;
	default:
		snprintf(buf, len, NET_CLASS "/%s/statistics/%s", p->netdev, c->name);
		break;
	}
}

/* phys_state and rate change with the state: re-read then, and now and again */
static int refresh_attrs(const struct pn_counters_port *p, int old_state)
{
	return p->nsamples % 16 == 0 || p->state != old_state;
}

static void read_rdma_attrs(struct pn_counters_set *s, struct pn_counters_port *p)
{
	char path[PATH_MAX], buf[128];
	int old = p->state;

	snprintf(path, sizeof(path), PN_IB_CLASS "/%s/ports/%d/state", p->dev, p->port);
	if (held_read(s, &p->io->fd_state, buf, sizeof(buf), path) >= 0)
		p->state = pn_parse_state(buf, p->state_name, sizeof(p->state_name));
	else
		p->state = -1;
	if (p->state < 0)
		p->state_name[0] = 0;
	if (!refresh_attrs(p, old))
		return;
	snprintf(path, sizeof(path), PN_IB_CLASS "/%s/ports/%d/phys_state", p->dev, p->port);
	p->phys_state[0] = 0;
	if (held_read(s, &p->io->fd_phys, buf, sizeof(buf), path) >= 0)
		pn_parse_state(buf, p->phys_state, sizeof(p->phys_state));
	snprintf(path, sizeof(path), PN_IB_CLASS "/%s/ports/%d/rate", p->dev, p->port);
	p->rate[0] = 0;
	p->rate_gbps = 0;
	if (held_read(s, &p->io->fd_rate, buf, sizeof(buf), path) >= 0) {
		p->rate_gbps = pn_parse_rate(buf);
		if (p->rate_gbps > 0) /* what does not parse is never shown */
			snprintf(p->rate, sizeof(p->rate), "%s", buf);
	}
}

static void read_netdev_attrs(struct pn_counters_set *s, struct pn_counters_port *p)
{
	char path[PATH_MAX], buf[64];
	int old = p->state;
	uint64_t mbps;

	snprintf(path, sizeof(path), NET_CLASS "/%s/operstate", p->dev);
	p->state = -1;
	p->state_name[0] = 0;
	if (held_read(s, &p->io->fd_state, buf, sizeof(buf), path) >= 0) {
		if (!strcmp(buf, "up"))
			p->state = PN_PORT_ACTIVE;
		else if (!strcmp(buf, "down") || !strcmp(buf, "lowerlayerdown") ||
			 !strcmp(buf, "notpresent"))
			p->state = PN_PORT_DOWN;
		snprintf(p->state_name, sizeof(p->state_name), "%s", buf);
		for (char *c = p->state_name; *c; c++)
			*c = (char)toupper((unsigned char)*c);
	}
	if (!refresh_attrs(p, old))
		return;
	/* speed is in Mb/s; reading it fails (EINVAL) or gives -1 when down */
	snprintf(path, sizeof(path), NET_CLASS "/%s/speed", p->dev);
	p->rate[0] = 0;
	p->rate_gbps = 0;
	if (held_read(s, &p->io->fd_rate, buf, sizeof(buf), path) >= 0 &&
	    !pn_counters_parse_value(buf, &mbps) && mbps > 0 && mbps < 10000000) {
		p->rate_gbps = (double)mbps / 1000.0;
		snprintf(p->rate, sizeof(p->rate), "%g Gb/sec", p->rate_gbps);
	}
}

static void read_remote(struct pn_counters_set *s, struct pn_counters_port *p, uint64_t *raw, char *ok)
{
	struct pn_perfquery_counters pc;
	int i, ret;

	memset(&pc, 0, sizeof(pc));
	if (s->cfg.query)
		ret = s->cfg.query(s->cfg.pq, p->lid, p->port, &pc);
	else
		ret = s->cfg.pq ? pn_perfquery_query(s->cfg.pq, p->lid, p->port, &pc) : -ENODEV;
	if (ret)
		PN_DBG(PN_LOG_NIC, "%s: %s", p->name, pn_errmsg(ret));
	/* counters were added in field order */
	for (i = 0; i < p->nctr; i++) {
		int f;

		for (f = 0; f < PN_PERFQUERY_NFIELDS; f++)
			if (!strcmp(p->ctr[i].name, pn_perfquery_field_name(f)))
				break;
		ok[i] = !ret && f < PN_PERFQUERY_NFIELDS && (pc.valid & (1u << f));
		raw[i] = ok[i] ? pc.v[f] : 0;
		if (f < PN_PERFQUERY_NFIELDS)
			p->ctr[i].width = (uint8_t)pn_perfquery_field_width(f, pc.ext);
	}
	snprintf(p->state_name, sizeof(p->state_name), "%s", ret ? "" : "REMOTE");
}

static void sample_port(struct pn_counters_set *s, struct pn_counters_port *p)
{
	uint64_t raw[PN_COUNTERS_MAX], t0, t1, t, rmax;
	char ok[PN_COUNTERS_MAX], path[PATH_MAX], buf[64];
	double elapsed, line_Bps;
	int i, brief = s->cfg.brief && strcmp(p->name, s->cfg.detail);

	if (s->cfg.progress)
		s->cfg.progress(s->cfg.progress_arg, p->name);
	t0 = clock_ns(s);
	if (p->type == PN_PT_RDMA)
		read_rdma_attrs(s, p);
	else if (p->type == PN_PT_NETDEV)
		read_netdev_attrs(s, p);
	if (p->type == PN_PT_REMOTE) {
		read_remote(s, p, raw, ok);
	} else {
		for (i = 0; i < p->nctr; i++) {
			int *fd = &p->io->fd[i], n;

			if (brief && (p->ctr[i].kind == PN_CK_OTHER ||
				      p->ctr[i].kind == PN_CK_RX_PKTS ||
				      p->ctr[i].kind == PN_CK_TX_PKTS)) {
				ok[i] = -1; /* not read */
				continue;
			}
			n = held_read(s, fd, buf, sizeof(buf), NULL);

			if (n == -EBADF) { /* not open (yet, or any more) */
				ctr_path(p, &p->ctr[i], path, sizeof(path));
				n = held_read(s, fd, buf, sizeof(buf), path);
			}
			ok[i] = n >= 0 && !pn_counters_parse_value(buf, &raw[i]);
		}
	}
	t1 = clock_ns(s);
	t = t0 + (t1 - t0) / 2;
	elapsed = p->nsamples && t > p->t_ns ? (double)(t - p->t_ns) * 1e-9 : 0;
	p->nsamples++;
	p->t_ns = t;
	p->elapsed = elapsed;
	line_Bps = p->rate_gbps * 1e9 / 8;

	p->nunreadable = 0;
	p->flags = 0;
	p->err_delta = p->disc_delta = p->err_total = p->disc_total = 0;
	p->err_valid = p->disc_valid = 0;
	for (i = 0; i < p->nctr; i++) {
		struct pn_counter *c = &p->ctr[i];
		int data = c->kind == PN_CK_RX_BYTES || c->kind == PN_CK_TX_BYTES;

		if (ok[i] < 0) { /* not read (brief) */
			c->flags = 0;
			c->delta = 0;
			c->rate = NAN;
			continue;
		}
		/*
		 * A data counter moves at most what the line carries in the
		 * interval (PLAUSIBLE_LINE: the two reads' timing is measured
		 * around them, not at them); more (a reset, a restored or
		 * corrupt value, a jump) is not traffic of this interval: no
		 * rate, never above 100 %.
		 */
		rmax = data && line_Bps > 0 && elapsed > 0
			       ? (uint64_t)(PLAUSIBLE_LINE * line_Bps * elapsed / c->scale) + 1
			       : 0;
		pn_counters_update(c, ok[i], raw[i], rmax);
		if (!ok[i])
			p->nunreadable++;
		if ((c->flags & PN_CF_DELTA) && elapsed > 0)
			c->rate = (double)c->delta / elapsed;
		p->flags |= c->flags & (PN_CF_WRAP | PN_CF_RESET | PN_CF_SAT | PN_CF_JUMP);
		if (c->kind == PN_CK_ERR || c->kind == PN_CK_DISC) {
			int e = c->kind == PN_CK_ERR;
			uint64_t *total = e ? &p->err_total : &p->disc_total;
			uint64_t *delta = e ? &p->err_delta : &p->disc_delta;

			if (c->flags & PN_CF_VALID)
				*total = sat_add(*total, c->value);
			if (c->flags & PN_CF_DELTA) {
				*delta = sat_add(*delta, c->delta);
				*(e ? &p->err_valid : &p->disc_valid) = 1;
			}
		}
	}
#define KRATE(k) (p->ix[k] >= 0 ? p->ctr[p->ix[k]].rate : NAN)
	p->rx_Bps = KRATE(PN_CK_RX_BYTES);
	p->tx_Bps = KRATE(PN_CK_TX_BYTES);
	p->rx_pps = KRATE(PN_CK_RX_PKTS);
	p->tx_pps = KRATE(PN_CK_TX_PKTS);
#undef KRATE
	p->util = NAN;
	if (line_Bps > 0 && (isfinite(p->rx_Bps) || isfinite(p->tx_Bps))) {
		double m = isfinite(p->rx_Bps) ? p->rx_Bps : 0;

		if (isfinite(p->tx_Bps) && p->tx_Bps > m)
			m = p->tx_Bps;
		p->util = pn_counters_util(m, line_Bps);
	}
	if (p->nsamples > 1)
		hist_push(p, p->rx_Bps, p->tx_Bps);
}

int pn_counters_set_sample(struct pn_counters_set *s)
{
	struct timespec ts;
	uint64_t now;
	int ret, i;

	if (!s->owner)
		return pn_err(-EINVAL, "cannot sample a copy of a counter set");
	now = clock_ns(s);
	ret = scan(s);
	if (ret)
		return ret;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->wall = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
	for (i = 0; i < s->n; i++)
		sample_port(s, &s->ports[i]);
	if (s->cfg.progress)
		s->cfg.progress(s->cfg.progress_arg, NULL);
	s->elapsed = s->seq && now > s->t_ns ? (double)(now - s->t_ns) * 1e-9 : 0;
	s->t_ns = now;
	s->seq++;
	return 0;
}

static size_t port_bytes(const struct pn_counters_port *p)
{
	return offsetof(struct pn_counters_port, ctr) + (size_t)p->nctr * sizeof(p->ctr[0]);
}

int pn_counters_set_copy(struct pn_counters_set *dst, const struct pn_counters_set *src)
{
	int i;

	if (dst->owner)
		return pn_err(-EINVAL, "cannot copy into a sampling counter set");
	if (dst->cap < src->n) {
		struct pn_counters_port *np = realloc(dst->ports, (size_t)src->n * sizeof(*np));

		if (!np)
			return pn_err(-ENOMEM, "out of memory");
		dst->ports = np;
		dst->cap = src->n;
	}
	for (i = 0; i < src->n; i++) {
		memcpy(&dst->ports[i], &src->ports[i], port_bytes(&src->ports[i]));
		dst->ports[i].io = NULL;
	}
	dst->cfg = src->cfg;
	dst->cfg.progress = NULL;
	dst->n = src->n;
	dst->seq = src->seq;
	dst->t_ns = src->t_ns;
	dst->wall = src->wall;
	dst->elapsed = src->elapsed;
	dst->interval = src->interval;
	dst->added = src->added;
	dst->removed = src->removed;
	return 0;
}

const struct pn_counters_port *pn_counters_set_find(const struct pn_counters_set *s, const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->ports[i].name, name))
			return &s->ports[i];
	return NULL;
}

void pn_counters_set_release(struct pn_counters_set *s)
{
	int i;

	for (i = 0; i < s->n; i++) {
		io_close(s->ports[i].io);
		free(s->ports[i].io);
	}
	free(s->ports);
	s->ports = NULL;
	s->n = s->cap = 0;
}

int pn_counters_remote_parse(const char *list, struct pn_counters_remote **out, int *n)
{
	char *copy, *tok, *save = NULL;
	int cap = 0, ret = 0;

	*out = NULL;
	*n = 0;
	if (!list)
		return 0;
	copy = strdup(list);
	if (!copy)
		return pn_err(-ENOMEM, "out of memory");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct pn_counters_remote r;

		ret = pn_perfquery_parse_lid(tok, &r.lid, &r.port);
		if (ret)
			break;
		if (*n == cap) {
			struct pn_counters_remote *nr;

			cap = cap ? 2 * cap : 4;
			nr = realloc(*out, (size_t)cap * sizeof(*nr));
			if (!nr) {
				ret = pn_err(-ENOMEM, "out of memory");
				break;
			}
			*out = nr;
		}
		(*out)[(*n)++] = r;
	}
	free(copy);
	if (ret) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return ret;
}
