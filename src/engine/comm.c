/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "engine/comm.h"
#include "base/log.h"
#include "base/util.h"
#include "engine/nodeseg.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct pn_transport *const pn_transports[] = {
	&pn_transport_shm,
	&pn_transport_verbs,
	&pn_transport_tcp,
	NULL,
};

const struct pn_transport *pn_transport_find(const char *name)
{
	int i;

	for (i = 0; pn_transports[i]; i++)
		if (!strcmp(pn_transports[i]->name, name))
			return pn_transports[i];
	return NULL;
}

struct pn_conn *pn_comm_conn(struct pn_comm *c, int peer, int chan)
{
	return pn_tp_conn(&c->tp, peer, chan);
}

/* The rendezvous the transports use while they set up: the boot's. */
static int oob_allgather(void *b, const void *mine, void *all, size_t len)
{
	return pn_boot_allgather(b, mine, all, len);
}

static int oob_agree(void *b, int ok, int *all_ok)
{
	return pn_boot_agree(b, ok, all_ok);
}

static int oob_barrier(void *b)
{
	return pn_boot_barrier(b);
}

static const char *oob_host(void *b, int rank)
{
	return pn_boot_host(b, rank);
}

static const uint8_t *oob_cookie(void *b)
{
	return pn_boot_cookie(b);
}

static int oob_local_addr(void *b, void *sockaddr_storage, unsigned *len)
{
	return pn_boot_local_addr(b, sockaddr_storage, len);
}

static const struct pn_tp_oob boot_oob = {
	.allgather = oob_allgather,
	.agree = oob_agree,
	.barrier = oob_barrier,
	.host = oob_host,
	.cookie = oob_cookie,
	.local_addr = oob_local_addr,
};

const char *pn_comm_transport_name(const struct pn_comm *c, int peer)
{
	if (peer == c->rank)
		return "self";
	return c->peers[peer].transport ? c->peers[peer].transport->name : "none";
}

static int choose_transports(struct pn_comm *c, const char *force)
{
	const struct pn_transport *forced = NULL;
	int p, i;

	if (force) {
		forced = pn_transport_find(force);
		if (!forced)
			return pn_err(-EINVAL, "unknown transport '%s' (this build has: shm, verbs, tcp)",
				      force);
	}
	for (p = 0; p < c->nranks; p++) {
		if (p == c->rank)
			continue;
		if (forced) {
			if (!forced->can_connect(&c->tp, p))
				return pn_err(-EINVAL, "transport '%s' cannot connect rank %d (host %s) and "
					      "rank %d (host %s)", force, c->rank,
					      pn_boot_host(c->boot, c->rank), p, pn_boot_host(c->boot, p));
			c->peers[p].transport = forced;
			continue;
		}
		for (i = 0; pn_transports[i]; i++)
			if (pn_transports[i]->can_connect(&c->tp, p))
				break;
		if (!pn_transports[i])
			return pn_err(-EHOSTUNREACH, "no transport reaches rank %d (host %s)", p,
				      pn_boot_host(c->boot, p));
		c->peers[p].transport = pn_transports[i];
	}
	return 0;
}

/* Allgather what the transports' probes need to know of every rank. */
static int publish_info(struct pn_comm *c, const char *force)
{
	struct pn_rank_info mine;
	int i, ret;

	memset(&mine, 0, sizeof(mine));
	c->info = calloc((size_t)c->nranks, sizeof(*c->info));
	if (!c->info)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; pn_transports[i]; i++) {
		const struct pn_transport *t = pn_transports[i];

		if (!t->publish || (force && strcmp(force, t->name)))
			continue;
		ret = t->publish(&c->tp, force != NULL, &mine);
		if (ret)
			return ret;
	}
	return pn_boot_allgather(c->boot, &mine, c->info, sizeof(mine));
}

int pn_comm_init(struct pn_comm **out, struct pn_boot *b, const struct pn_comm_cfg *cfg)
{
	struct pn_comm *c = calloc(1, sizeof(*c));
	int p, i, ret;

	if (!c)
		return pn_err(-ENOMEM, "out of memory");
	c->boot = b;
	c->rank = pn_boot_rank(b);
	c->nranks = pn_boot_nranks(b);
	c->node = pn_boot_node(b, c->rank);
	c->nnodes = pn_boot_nnodes(b);
	c->local_rank = pn_boot_local_rank(b);
	c->local_size = pn_boot_local_size(b);
	c->nchannels = cfg && cfg->nchannels > 0 ? cfg->nchannels : 1;
	c->verbs_port = cfg ? cfg->verbs_port : NULL;
	c->verbs_port_arg = cfg ? cfg->verbs_port_arg : NULL;
	c->ib_hca = cfg ? cfg->ib_hca : NULL;
	c->ib_disable = cfg ? cfg->ib_disable : 0;
	c->timeout = pn_boot_timeout(b);
	c->oob = &boot_oob;
	c->oob_ctx = b;
	c->oversubscribed = c->local_size > sysconf(_SC_NPROCESSORS_ONLN);
	c->peers = calloc((size_t)c->nranks, sizeof(*c->peers));
	c->conns = calloc((size_t)c->nranks * (size_t)c->nchannels, sizeof(*c->conns));
	c->local_ranks = calloc((size_t)c->local_size, sizeof(int));
	if (!c->peers || !c->conns || !c->local_ranks) {
		pn_comm_free(c);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (p = 0, i = 0; p < c->nranks; p++) {
		c->peers[p].node = pn_boot_node(b, p);
		c->peers[p].pid = pn_boot_pid(b, p);
		c->peers[p].local = -1;
		if (c->peers[p].node == c->node) {
			c->peers[p].local = i;
			c->local_ranks[i++] = p;
		}
	}
	for (p = 0; p < c->nranks * c->nchannels; p++) {
		c->conns[p].peer = p / c->nchannels;
		c->conns[p].chan = p % c->nchannels;
		c->conns[p].g = &c->tp;
	}
	ret = pn_nodeseg_init(c);
	if (!ret)
		ret = publish_info(c, cfg ? cfg->transport : NULL);
	if (!ret)
		ret = choose_transports(c, cfg ? cfg->transport : NULL);
	for (i = 0; !ret && pn_transports[i]; i++)
		ret = pn_transports[i]->setup(&c->tp);
	/* stopped in the mesh, resumed after the others gave up: its fault */
	ret = pn_boot_if_stopped(b, ret);
	c->verbs_port = NULL;
	c->verbs_port_arg = NULL;
	if (ret) {
		pn_comm_free(c);
		return ret;
	}
	for (p = 0; p < c->nranks; p++) {
		if (p == c->rank)
			continue;
		for (i = 0; i < c->nchannels; i++)
			pn_comm_conn(c, p, i)->t = c->peers[p].transport;
		PN_DBG(PN_LOG_NET, "rank %d -> rank %d (host %s): %s", c->rank, p,
		       pn_boot_host(b, p), c->peers[p].transport->name);
	}
	*out = c;
	return 0;
}

void pn_comm_free(struct pn_comm *c)
{
	int i;

	if (!c)
		return;
	if (c->conns)
		for (i = 0; pn_transports[i]; i++)
			pn_transports[i]->close(&c->tp);
	pn_nodeseg_free(c);
	free(c->peers);
	free(c->conns);
	free(c->local_ranks);
	free(c->info);
	free(c);
}

void pn_comm_abort(struct pn_comm *c, const char *why)
{
	char msg[300];

	if (c->failed)
		return;
	c->failed = 1;
	snprintf(msg, sizeof(msg), "%s", why);
	pn_nodeseg_set_abort(c, c->rank, msg);
	pn_boot_abort(c->boot, msg);
}

int pn_comm_local_notice(struct pn_comm *c, char *msg, size_t len)
{
	if (!pn_nodeseg_get_abort(c, msg, len))
		return 0;
	if (c->rank == 0 && !c->failed) {
		c->failed = 1;
		pn_boot_abort(c->boot, msg);
	}
	return 1;
}

void pn_comm_done_waiting(struct pn_comm *c)
{
	if (!c->said_waiting)
		return;
	pn_nodeseg_set_waiting(c, -1, pn_now());
	c->said_waiting = 0;
}

/*
 * How long a rank that met a closed connection waits for the notice of the
 * rank that failed first.  The notice reaches it through rank 0, which
 * passes it on only when it next polls (pn_boot_poll_abort): on a loaded
 * host that took longer than the 50 ms this used to be, and the rank
 * blamed its peer's closed connection instead of the cause (a CI run of
 * t0604).  As long as pn_boot_abort gives its own send; spent only when
 * no notice comes, on the way out of a failed job.
 */
#define PN_NOTICE_GRACE 0.5

int pn_comm_first_cause(struct pn_comm *c, int err)
{
	double until = pn_now() + PN_NOTICE_GRACE;
	char saved[300], msg[300];
	int ret;

	if (err == -ECANCELED || err == -ETIMEDOUT || err >= 0 || c->failed)
		return err;
	snprintf(saved, sizeof(saved), "%s", pn_errmsg(err));
	/* the failed rank sent its notice before its connections closed */
	do {
		if (pn_comm_local_notice(c, msg, sizeof(msg)))
			return pn_err(-ECANCELED, "%s", msg);
		ret = pn_boot_poll_abort(c->boot);
		if (ret == -ECANCELED)
			return ret;
		if (ret)
			break;
		usleep(1000);
	} while (pn_now() < until);
	return pn_err(err, "%s", saved);
}

/*
 * The rank at the end of the chain of waits that starts at first: follow
 * local ranks that say they wait (node segment) until one that does not
 * (stopped, busy) or a remote one, which is the one to name.
 */
static int wait_chain_end(struct pn_comm *c, int first, double now)
{
	int p = first, k, q;

	for (k = 0; k < c->local_size; k++) {
		if (p < 0 || p >= c->nranks || c->peers[p].local < 0)
			break;
		q = pn_nodeseg_waiting(c, c->peers[p].local, now);
		if (q < 0 || q >= c->nranks || q == c->rank || q == p)
			break;
		p = q;
	}
	return p;
}

int pn_comm_check(struct pn_comm *c, int waiting_for, double since)
{
	char msg[300];
	double now;
	int ret;

	/* the clock and the checks below every 256 spins (16 when there are
	 * more local ranks than cores: then the peer needs our core) */
	if (++c->spin_checks & (c->oversubscribed ? 15 : 255))
		return 0;
	if (pn_comm_local_notice(c, msg, sizeof(msg)))
		return pn_err(-ECANCELED, "%s", msg);
	now = pn_now();
	/*
	 * More local ranks than cores: the peer we wait for needs our core, so
	 * yield, then sleep briefly.  Otherwise spin like MPI and NCCL do, yield
	 * once a wait passes 50 us (the peer may be waiting for a core), and
	 * only nap when a wait has lasted long (a slow remote peer).
	 */
	if (c->oversubscribed) {
		if (now - since > 5e-3)
			usleep(200);
		else if (now - since > 1e-3)
			usleep(20);
		else
			sched_yield();
	} else if (now - since > 0.1) {
		usleep(100);
	} else if (now - since > 50e-6) {
		/* a peer that has not answered in 50 us may be waiting for
		 * a core (a shared or busy machine): offer ours; when nobody
		 * else wants it the call returns at once */
		sched_yield();
	}
	if (now - c->last_check < 0.02 && now - since < c->timeout)
		return 0;
	c->last_check = now;
	pn_nodeseg_set_waiting(c, waiting_for, now);
	c->said_waiting = 1;
	if (waiting_for >= 0 && waiting_for != c->rank && c->peers[waiting_for].local >= 0 &&
	    kill(c->peers[waiting_for].pid, 0) && errno == ESRCH) {
		ret = pn_err(-EPIPE, "rank %d (host %s, pid %d) died", waiting_for,
			     pn_boot_host(c->boot, waiting_for), c->peers[waiting_for].pid);
		/* a rank that failed said why before it ended: its notice, when
		 * there is one, names the rank at fault (the notice check above
		 * may have run just before it was written) */
		ret = pn_comm_first_cause(c, ret);
		if (ret != -ECANCELED)
			pn_comm_abort(c, pn_errmsg(ret));
		return ret;
	}
	ret = pn_boot_poll_abort(c->boot);
	if (ret) {
		if (ret != -ECANCELED) {
			snprintf(msg, sizeof(msg), "%s", pn_errmsg(ret));
			pn_comm_abort(c, msg);
			pn_err(ret, "%s", msg);
		}
		return ret;
	}
	if (now - since >= c->timeout) {
		int end = waiting_for >= 0 ? wait_chain_end(c, waiting_for, now) : -1;

		/* named as the rendezvous names them: host and pid */
		if (end >= 0 && end != waiting_for)
			ret = pn_err(-ETIMEDOUT, "timed out after %g s waiting for rank %d (host %s, "
				     "pid %d), which waits for rank %d (host %s, pid %d)", c->timeout,
				     waiting_for, pn_boot_host(c->boot, waiting_for),
				     c->peers[waiting_for].pid, end, pn_boot_host(c->boot, end),
				     c->peers[end].pid);
		else if (waiting_for >= 0)
			ret = pn_err(-ETIMEDOUT, "timed out after %g s waiting for rank %d (host %s, "
				     "pid %d)", c->timeout, waiting_for,
				     pn_boot_host(c->boot, waiting_for), c->peers[waiting_for].pid);
		else
			ret = pn_err(-ETIMEDOUT, "timed out after %g s", c->timeout);
		snprintf(msg, sizeof(msg), "%s", pn_errmsg(ret));
		pn_comm_abort(c, msg);
		pn_err(ret, "%s", msg);
		return ret;
	}
	return 0;
}

int pn_comm_local_barrier(struct pn_comm *c)
{
	uint64_t e = pn_nodeseg_arrive(c);
	double since = 0;
	int i, ret;

	for (i = 0; i < c->local_size; i++) {
		while (!pn_nodeseg_arrived(c, i, e)) {
			if (since == 0)
				since = pn_now();
			ret = pn_comm_check(c, c->local_ranks[i], since);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int pn_comm_barrier(struct pn_comm *c)
{
	return pn_boot_barrier(c->boot);
}
