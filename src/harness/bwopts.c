/* SPDX-License-Identifier: MIT */
/*
 * penny bw's options checked and turned into its configuration (bwopts.h).
 */
#define _GNU_SOURCE
#include "harness/bwopts.h"
#include "harness/bwrun.h"

#include "base/log.h"
#include "base/util.h"
#include "transport/verbs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Options that do not go together, or a value the test cannot take:
 * the first one's message, else NULL. */
static const char *refused(const struct pn_bw_opts *o)
{
	/*
	 * Ranges are the table's (-q -t -I -n -D -p -s --mtu --use_cuda
	 * --expect); the initial values -1 and 0 mean "not given".
	 */
	if (o->lat && o->bidir)
		return "--lat and -b do not go together";
	if (o->lat && o->qps != 1)
		return "--lat uses one QP";
	if (o->use_cuda >= 0 && o->lat)
		return "--use_cuda measures bandwidth; --lat polls host memory";
	if (o->mtu && !pn_verbs_mtu_valid(o->mtu))
		return "-m/--mtu must be 256, 512, 1024, 2048 or 4096";
	if (o->duration > 0 && o->iters > 0)
		return "-n and -D exclude each other";
	if (o->duration > 0 && o->lat)
		return "--lat counts iterations (-n), not seconds";
	return NULL;
}

int pn_bw_opts_cfg(struct pn_bw_opts *o, struct pn_bw_cfg *c)
{
	const char *why;
	int i;

	pn_bw_cfg_init(c);
	/* -a would run its sizes whatever -s said */
	if (o->all && o->size != PN_BW_SIZE_UNSET)
		return pn_err(-EINVAL, "-a runs every size from 2 bytes to 8 MiB, -s one size: "
				       "give one of them");
	if (o->size == PN_BW_SIZE_UNSET)
		o->size = 65536;
	/* the two ends of --loopback meet on a port of their own */
	if (o->loopback && o->port)
		return pn_err(-EINVAL, "-p is the server's port; --loopback connects its two ends "
				       "on a port of its own");
	o->port_set = o->port != 0;
	if (!o->port)
		o->port = PN_BW_PORT;
	if (o->gpu_engine)
		return pn_err(-EINVAL, "--gpu-engine goes with --gpu");
	if (!strcmp(o->op, "write"))
		c->op = PN_VERBS_WRITE;
	else if (!strcmp(o->op, "read"))
		c->op = PN_VERBS_READ;
	else if (!strcmp(o->op, "send"))
		c->op = PN_VERBS_SEND;
	else
		return pn_err(-EINVAL, "--op must be write, read or send, not '%s'", o->op);
	if (o->lat)
		c->flags |= PN_BW_LAT;
	if (o->bidir)
		c->flags |= PN_BW_BIDIR;
	why = refused(o);
	if (why)
		return pn_err(-EINVAL, "%s", why);
	if (o->connection && strcasecmp(o->connection, "RC"))
		return pn_err(-EINVAL, "-c %s: not supported by penny: it tests RC (reliable "
				       "connected) QPs only, with RDMA write, read and send",
			      o->connection);
	if (o->limit_bw >= 0 && o->min_gbps >= 0)
		return pn_err(-EINVAL, "-w and --min-gbps are one gate: give one");
	if (o->limit_bw >= 0 && o->lat)
		return pn_err(-EINVAL, "-w is a bandwidth limit; --lat measures latency");
	if ((o->min_gbps >= 0 || o->expect) && o->lat)
		return pn_err(-EINVAL, "%s is a bandwidth gate; --lat measures latency",
			      o->min_gbps >= 0 ? "--min-gbps" : "--expect");
	/* the threshold came from --min-gbps or -w, --expect was dropped */
	if (o->expect && (o->min_gbps >= 0 || o->limit_bw >= 0))
		return pn_err(-EINVAL, "--expect and %s both set the gate: give one",
			      o->limit_bw >= 0 ? "-w" : "--min-gbps");
	/* the latency table has no bandwidth column for them to change */
	if (o->lat && (o->report_gbits || o->no_peak))
		return pn_err(-EINVAL, "%s is about the bandwidth columns; --lat measures latency",
			      o->report_gbits ? "--report_gbits" : "-N");
	/* -w: perftest's verifier limit, in the table's unit */
	if (o->limit_bw >= 0)
		o->min_gbps = o->report_gbits ? o->limit_bw : o->limit_bw / PN_BW_MIB_PER_GBIT;
	c->nqp = (uint32_t)o->qps;
	c->tx_depth = (uint32_t)o->txdepth;
	c->mtu = (uint32_t)o->mtu;
	c->iters = o->duration > 0 ? 0 : o->iters > 0 ? (uint64_t)o->iters : o->lat ? 1000 : 5000;
	c->duration = o->duration;
	if (o->all) {
		for (i = 1; i <= 23; i++)
			c->sizes[c->nsizes++] = 1ull << i;
	} else {
		if (o->lat && !o->size)
			return pn_err(-EINVAL, "--lat needs -s of at least 1");
		c->sizes[c->nsizes++] = o->size;
	}
	return 0;
}

static int list_len(const char *list)
{
	int n = 1;

	for (; *list; list++)
		n += *list == ',';
	return n;
}

int pn_bw_opts_devices(const struct pn_bw_opts *o)
{
	int nd = o->dev ? list_len(o->dev) : 0;

	if (o->loopback && list_len(o->loopback) > 2)
		return pn_err(-EINVAL, "--loopback takes DEV1 or DEV1,DEV2, not '%s'", o->loopback);
	if (o->loopback && o->dev)
		return pn_err(-EINVAL, "--loopback names the devices; -d is for the other modes");
	if (nd > PN_BW_MAX_RAILS)
		return pn_err(-EINVAL, "-d names %d devices, at most %d", nd, PN_BW_MAX_RAILS);
	if (nd > 1 && !o->all_rails)
		return pn_err(-EINVAL, "-d names %d devices: a list is for --all-rails", nd);
	return 0;
}

int pn_bw_opts_gpu(const struct pn_bw_opts *o, int nargs, int launched)
{
	/* RDMA options have no meaning for GPU copies */
	if (nargs || o->loopback || o->all_rails || o->dev || o->duration > 0 || o->all ||
	    o->expect || o->min_gbps >= 0 || o->limit_bw >= 0 || o->rdma_cm || o->events ||
	    launched || o->qps != 1 || strcmp(o->op, "write") || o->ibport || o->gid >= 0 ||
	    o->mtu || o->txdepth != 128 || o->inline_size >= 0 || o->use_cuda >= 0 ||
	    o->qp_timeout || o->report_gbits || o->no_peak || o->connection || o->cpu_freq ||
	    o->transport || (o->port && o->port != PN_BW_PORT))
		return pn_err(-EINVAL, "--gpu measures this host's GPUs in one process: it "
				       "takes -s, -n, -b, --lat and --gpu-engine only");
	/* 0 would be taken for "not given" (256M) */
	if (!o->size)
		return pn_err(-EINVAL, "--gpu: -s must be between 4K and 1G");
	return 0;
}

/* A bare number that is no IPv4 address ("95", "90.5"), so no host. */
static int is_pct(const char *arg)
{
	struct in_addr a;

	return strspn(arg, "0123456789.") == strlen(arg) && inet_pton(AF_INET, arg, &a) != 1;
}

/* HOST, [IPV6], HOST:PORT or [IPV6]:PORT into o->host and o->port (a
 * decimal port, as -p's: "0x50" and "010" are no ports 80 and 8). */
static int host_port(struct pn_bw_opts *o, const char *arg)
{
	const char *colon = strchr(arg, ':'), *h = arg, *ps = colon, *rb = NULL;
	size_t hl = colon ? (size_t)(colon - arg) : 0;
	int port = 0;

	o->host = arg;
	if (!arg[0])
		return pn_err(-EINVAL, "the HOST is empty");
	/* a name, an IPv4 address or a bare IPv6 one */
	if (arg[0] != '[' && (!colon || strchr(colon + 1, ':')))
		return 0;
	if (arg[0] == '[') {
		rb = strchr(arg, ']');
		h = arg + 1;
		hl = rb ? (size_t)(rb - h) : 0;
		ps = rb && rb[1] == ':' ? rb + 1 : NULL;
	}
	/* [IPV6] without a port: the address, as in a URL */
	if (rb && !rb[1] && memchr(h, ':', hl))
		ps = NULL;
	else if (!ps || !ps[1] || strspn(ps + 1, "0123456789") != strlen(ps + 1) ||
		 pn_parse_dec_int(ps + 1, &port) || port < 1 || port > 65535 || !hl ||
		 (rb && !memchr(h, ':', hl)))
		return pn_err(-EINVAL, "'%s' is not HOST:PORT with a port of 1..65535 (or give "
				       "the HOST and -p PORT)", arg);
	if (hl >= sizeof(o->hostbuf))
		return pn_err(-ENAMETOOLONG, "'%.64s...': the HOST is too long", arg);
	if (ps && o->port_set && port != o->port)
		return pn_err(-EINVAL, "'%s' and -p %d name two ports: give one", arg, o->port);
	snprintf(o->hostbuf, sizeof(o->hostbuf), "%.*s", (int)hl, h);
	o->host = o->hostbuf;
	if (ps)
		o->port = port;
	return 0;
}

int pn_bw_opts_args(struct pn_bw_opts *o, const char *transport, int nargs, char *const *args,
		    int *tcp)
{
	int i;

	*tcp = transport && !strcmp(transport, "tcp");
	if (transport && !*tcp && strcmp(transport, "verbs"))
		return pn_err(-EINVAL, "penny bw measures verbs or tcp, not '%s'", transport);
	/* "--loopback --transport tcp": the option was taken for the device */
	if ((o->loopback && o->loopback[0] == '-') || (o->dev && o->dev[0] == '-'))
		return pn_err(-EINVAL, "%s '%s': that is an option, not a device (%s needs its "
				       "DEV)", o->loopback ? "--loopback" : "-d",
			      o->loopback ? o->loopback : o->dev, o->loopback ? "--loopback" : "-d");
	/* "--expect 95": a percentage taken for a HOST; "--expect 10.0.0.2" is the host */
	for (i = 0; i < nargs && o->expect && !o->expect[0]; i++)
		if (is_pct(args[i]))
			return pn_err(-EINVAL, "'%s' is not a host: write --expect=%s", args[i],
				      args[i]);
	if (nargs > 1)
		return pn_err(-EINVAL, "one HOST at most (got '%s' and '%s')", args[0], args[1]);
	if (o->all_rails && (nargs || o->loopback))
		return pn_err(-EINVAL, "--all-rails runs under a launcher (mpirun, srun, --np)");
	if (o->loopback && nargs)
		return pn_err(-EINVAL, "--loopback runs both ends in this host: no HOST (got '%s')",
			      args[0]);
	/* the TCP path sends host memory: a GPU's would be a claim it never tested */
	if (*tcp && o->use_cuda >= 0)
		return pn_err(-EINVAL, "--use_cuda registers GPU memory with an RDMA device; "
				       "--transport tcp measures the TCP path, with host memory");
	/* both ends in one host talk over its loopback, whatever NICs are named */
	if (*tcp && o->loopback && strcmp(o->loopback, "lo"))
		return pn_err(-EINVAL, "--loopback %s: over --transport tcp both ends talk through "
				       "this host's loopback interface, never a NIC: give --loopback lo",
			      o->loopback);
	/* it measured nothing: a row of zeros */
	if (*tcp && o->all_rails)
		return pn_err(-EINVAL, "--all-rails tests every RDMA NIC pair; --transport tcp "
				       "measures one TCP stream between the ranks");
	return nargs ? host_port(o, args[0]) : 0;
}

int pn_bw_opts_pairs(const struct pn_bw_opts *o, int nranks, int single, int nargs,
		     const char *launcher, int *rank0)
{
	int ret = pn_bwrun_pairs(nranks, single, nargs, o->loopback, o->all_rails, launcher, rank0);

	if (ret || nranks <= 1 || !o->port_set)
		return ret;
	*rank0 = 1;
	return pn_err(-EINVAL, "-p is the server's port; under a launcher (%s) ranks 2k and 2k+1 "
			       "meet through the job's rendezvous: drop -p", launcher);
}

void pn_bw_opts_run(const struct pn_bw_opts *o, struct pn_bwrun *r)
{
	r->ibport = o->ibport;
	r->gid = o->gid;
	r->inline_size = o->inline_size;
	r->use_cuda = o->use_cuda;
	r->all_rails = o->all_rails;
	r->qp_timeout = o->qp_timeout;
}

/* ", " and one more item onto the list in buf (n: its length so far). */
static void __attribute__((format(printf, 4, 5)))
list_add(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;

	if (*n >= len)
		return;
	if (*n)
		*n += (size_t)snprintf(buf + *n, len - *n, ", ");
	if (*n >= len)
		return;
	va_start(ap, fmt);
	*n += (size_t)vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
}

/* With the TCP path: the RDMA settings given that it does not use, as one
 * line into buf (1), else "" (0). */
static int tcp_unused(const struct pn_bw_opts *o, int tcp, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	if (!tcp)
		return 0;
	if (o->dev)
		list_add(buf, len, &n, "-d %s", o->dev);
	if (o->ibport)
		list_add(buf, len, &n, "-i %d", o->ibport);
	if (o->gid >= 0)
		list_add(buf, len, &n, "-x %d", o->gid);
	if (o->qps != 1)
		list_add(buf, len, &n, "-q %d", o->qps);
	if (o->txdepth != 128)
		list_add(buf, len, &n, "-t %d", o->txdepth);
	if (o->mtu)
		list_add(buf, len, &n, "--mtu %d", o->mtu);
	if (strcmp(o->op, "write"))
		list_add(buf, len, &n, "--op %s", o->op);
	if (o->inline_size >= 0)
		list_add(buf, len, &n, "-I %d", o->inline_size);
	if (o->qp_timeout)
		list_add(buf, len, &n, "-u %d", o->qp_timeout);
	if (n && n < len)
		snprintf(buf + n, len - n, ": RDMA settings, unused by --transport tcp (one TCP "
					   "stream)");
	return n > 0;
}

int pn_bw_opts_note(const struct pn_bw_opts *o, int tcp, int i, char *buf, size_t len)
{
	buf[0] = 0;
	if (i == 0 && o->rdma_cm)
		snprintf(buf, len, "-R: penny connects the QPs over its own TCP exchange, not "
				   "rdma_cm (both ends must be penny bw); the test is the same");
	else if (i == 1 && o->events)
		snprintf(buf, len, "-e: penny polls the completion queue instead of sleeping on "
				   "its events: the CPU is busy%s", o->lat ? " and the latency lower "
				   "than perftest -e's" : "; the bandwidth is the same");
	else if (i == 2)
		tcp_unused(o, tcp, buf, len);
	return i < 3;
}
