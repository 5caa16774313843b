/* SPDX-License-Identifier: MIT */
/*
 * The calls that make communicators (each into the interposer's table,
 * penny's state pending until its set-up), and communicators one thread
 * made every rank of: ncclCommInitAll's, or the ncclCommInitRank(Config)
 * calls of one id in one group that cover all its ranks (nccl-tests makes its communicators so, for -g and -t alike).  The
 * thread that made them drives them with grouped calls (nccl-tests' -g
 * N), so penny's set-up, a host exchange every rank enters at once (over
 * NCCL's all-gathers on the real communicators), can never wait for the
 * first allreduce outside a group there: it runs when they are made, on a
 * thread for each rank, and returns when every rank's is done.  No rank of
 * such a communicator lives in another process, so no other process waits
 * on a set-up that would come later.  Calls inside groups on them are then
 * penny's as the plugin's kernels are enqueued without the host (the
 * caller's thread only launches them, one rank after another, at the
 * group's end).  The group calls are here: the calls penny takes inside a
 * group run at its end.
 */
#define _GNU_SOURCE
#include "interpose.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* A communicator made inside this thread's group, until its ncclGroupEnd. */
struct born {
	ncclComm_t c;
	ncclUniqueId id;
	int rank, n;
	const char *how;
};
#define BORN_MAX 1024
static _Thread_local struct born *born;
static _Thread_local int nborn, born_room;

/*
 * A thread that ends inside its group (no ncclGroupEnd) leaves its list to
 * born_gone, the value of its born_key: the list goes, its communicators
 * stay as they are (pending: whoever calls them sets them up, or destroys
 * them; the list holds no reference to them).
 */
static pthread_key_t born_key, later_key;
static pthread_once_t born_once = PTHREAD_ONCE_INIT;
static int born_keyed, later_keyed;

static void born_gone(void *list)
{
	free(list);
}

static void born_key_make(void)
{
	born_keyed = !pthread_key_create(&born_key, born_gone);
	later_keyed = !pthread_key_create(&later_key, born_gone);
}

/* The library unloaded (dlclose): no thread's exit may call born_gone. */
__attribute__((destructor)) static void born_key_drop(void)
{
	if (born_keyed)
		pthread_key_delete(born_key);
	if (later_keyed)
		pthread_key_delete(later_key);
}

/* born (NULL: none) as the thread's list for born_gone. */
static void born_keep(void)
{
	pthread_once(&born_once, born_key_make);
	if (born_keyed)
		pthread_setspecific(born_key, born);
}

void born_add(ncclComm_t c, const ncclUniqueId *id, int rank, int n, const char *how)
{
	struct born *more;

	if (nborn == born_room && born_room < BORN_MAX &&
	    (more = realloc(born, (size_t)(born_room + 16) * sizeof(*born)))) {
		born = more;
		born_room += 16;
		born_keep();
	}
	if (nborn == born_room) {
		/* not remembered: its set-up waits for its first call outside a group */
		if (debug_on && rank == 0)
			tell_new(c, how, n, 0);
		return;
	}
	born[nborn++] = (struct born){ .c = c, .id = *id, .rank = rank, .n = n, .how = how };
}

/*
 * Calls penny took inside this thread's group (a framework's coalesced
 * calls, nccl-tests' -g N), kept for the group's outermost end, where they
 * run after NCCL's own, as NCCL runs its grouped calls there (work the
 * caller enqueues before ncclGroupEnd comes first), or, at an
 * ncclGroupSimulateEnd, go to NCCL inside the group, which ends them with
 * its own (simulated: nothing runs).  A thread that ends inside its group
 * leaves them to born_gone (never run, as NCCL's); the list stays for the
 * thread's next group.
 */
#define LATER_MAX (1 << 16)
static _Thread_local struct call *later;
static _Thread_local int nlater, later_room;

int later_add(const struct call *c)
{
	struct call *more;
	int room = later_room ? 2 * later_room : 16;

	if (nlater == later_room) {
		if (room > LATER_MAX || !(more = realloc(later, (size_t)room * sizeof(*later))))
			return -1;
		later = more;
		later_room = room;
		pthread_once(&born_once, born_key_make);
		if (later_keyed)
			pthread_setspecific(later_key, later);
	}
	later[nlater++] = *c;
	return 0;
}

/* The group's kept calls run (ncclSuccess or the first failure), or given
 * to NCCL's group, still open (those of communicators gone: nothing). */
static ncclResult_t later_flush(int run)
{
	ncclResult_t r, first = ncclSuccess;
	struct pcomm *p;
	int i, n = nlater;

	nlater = 0;
	for (i = 0; i < n; i++) {
		r = ncclSuccess;
		if (run)
			r = run_later(&later[i]);
		else if ((p = hold(later[i].comm))) {
			r = nccl_call(&later[i]);
			unhold(p);
		}
		if (first == ncclSuccess && r != ncclSuccess && r != ncclInProgress)
			first = r;
	}
	return first;
}

EXPORT ncclResult_t ncclGroupStart(void)
{
	ncclResult_t r;

	if (!real())
		return ncclSystemError;
	r = seen(R.ncclGroupStart());
	if (r == ncclSuccess)
		group_depth++;
	return r;
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t r, mine;

	if (!real())
		return ncclSystemError;
	if (group_depth > 0)
		group_depth--;
	r = seen(R.ncclGroupEnd());
	if (group_depth)
		return r;
	/* the communicators made in the group are made now (or failed) */
	born_settle(r == ncclSuccess);
	mine = nlater ? later_flush(1) : ncclSuccess;
	return mine != ncclSuccess && (r == ncclSuccess || r == ncclInProgress) ? mine : r;
}

/*
 * Closes the group as ncclGroupEnd does, where the calls penny took in it
 * go to NCCL's group first: NCCL ends it as its own, simulating them
 * (nothing runs, nothing written; its estimate counts them), or running
 * them where it runs the group (no simInfo, non-blocking communicators), or
 * dropping them where it refuses the simInfo.
 */
EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *info)
{
	ncclResult_t r, mine = ncclSuccess;

	if (!real())
		return ncclSystemError;
	if (!R.ncclGroupSimulateEnd)
		return lacks("ncclGroupSimulateEnd");
	if (group_depth > 0)
		group_depth--;
	if (!group_depth && nlater)
		mine = later_flush(0);
	r = seen(R.ncclGroupSimulateEnd(info));
	if (!group_depth)
		born_settle(0);
	return mine != ncclSuccess && r == ncclSuccess ? mine : r;
}

/* The set-up of one rank, once every rank's thread exists (go 1; -1: no
 * set-up, a thread could not be made). */
struct gate {
	pthread_mutex_t m;
	pthread_cond_t c;
	int go;
};

struct mate {
	struct pcomm *p;
	struct gate *g;
	pthread_t t;
};

static void *mate_main(void *arg)
{
	struct mate *a = arg;
	int go;

	pthread_mutex_lock(&a->g->m);
	while (!a->g->go)
		pthread_cond_wait(&a->g->c, &a->g->m);
	go = a->g->go;
	pthread_mutex_unlock(&a->g->m);
	if (go > 0)
		attach(a->p);	/* its outcome in p->state and p->err */
	return NULL;
}

void together(struct pcomm **v, int k)
{
	struct gate g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	struct mate *m = calloc((size_t)k, sizeof(*m));
	int i, made = 0;

	for (i = 0; m && i < k; i++) {
		m[i].p = v[i];
		m[i].g = &g;
		if (pthread_create(&m[i].t, NULL, mate_main, &m[i]))
			break;
		made++;
	}
	pthread_mutex_lock(&g.m);
	g.go = made == k ? 1 : -1;
	pthread_cond_broadcast(&g.c);
	pthread_mutex_unlock(&g.m);
	for (i = 0; i < made; i++)
		pthread_join(m[i].t, NULL);
	free(m);
	if (made < k) {
		/* no rank set up: NCCL runs every call, and says nothing failed */
		say("no thread for penny's set-up of communicator %p (%d ranks of one thread); "
		    "NCCL runs it", (void *)v[0]->real, k);
		for (i = 0; i < k; i++)
			__atomic_store_n(&v[i]->state, PC_OFF, __ATOMIC_RELEASE);
		return;
	}
	for (i = 0; i < k; i++)
		v[i]->together = __atomic_load_n(&v[i]->state, __ATOMIC_ACQUIRE) == PC_ON;
}

/* The communicators of born[0..n) that make up the whole of born[at]'s id,
 * held, into v (their number; 0: not all of them, or not all ready). */
static int whole(int at, int n, struct pcomm **v)
{
	const struct born *b = &born[at];
	char *got = calloc((size_t)b->n, 1);
	int i, k = 0, bad = !got;
	ncclResult_t ae;

	for (i = at; i < n && !bad; i++) {
		if (born[i].n != b->n || memcmp(&born[i].id, &b->id, sizeof(b->id)))
			continue;
		if (born[i].rank < 0 || born[i].rank >= b->n || got[born[i].rank]++ || k == b->n) {
			bad = 1;
			break;
		}
		/* still the table's (another thread may have destroyed it since: then
		 * NCCL's is gone, and not to be asked), and made (a non-blocking
		 * communicator may still be on its way) */
		if (!(v[k] = hold(born[i].c))) {
			bad = 1;
			break;
		}
		if (real_async_error(born[i].c, &ae) || ae != ncclSuccess ||
		    __atomic_load_n(&v[k]->state, __ATOMIC_ACQUIRE) != PC_PENDING)
			bad = 1;
		k++;
	}
	free(got);
	if (bad || k < b->n) {
		for (i = 0; i < k; i++)
			unhold(v[i]);
		return 0;
	}
	return k;
}

void born_settle(int made)
{
	int i, j, k, n = nborn;
	struct pcomm **v;

	if (!n)
		return;	/* every grouped call comes here */
	v = calloc((size_t)n, sizeof(*v));
	nborn = 0;
	for (i = 0; i < n; i++) {
		if (!born[i].c)
			continue;
		k = made && v ? whole(i, n, v) : 0;
		if (debug_on)
			for (j = i; j < n; j++)
				if (born[j].c && born[j].rank == 0 && born[j].n == born[i].n &&
				    !memcmp(&born[j].id, &born[i].id, sizeof(born[i].id)))
					tell_new(born[j].c, born[j].how, born[j].n, k > 0);
		if (k) {
			together(v, k);
			for (j = 0; j < k; j++)
				unhold(v[j]);
		}
		/* this id is told and done */
		for (j = n - 1; j >= i; j--)
			if (born[j].n == born[i].n && !memcmp(&born[j].id, &born[i].id, sizeof(born[i].id)))
				born[j].c = NULL;
	}
	free(v);
	free(born);
	born = NULL;
	born_room = 0;
	born_keep();
}

/*
 * A clique's communicators (every rank a thread of this process) whose
 * destroy came: penny's release is collective (the plugin's barriers
 * before it frees what the peers mapped), which one thread destroying
 * them one after another (nccl-tests' main thread) could never give.
 * Each waits here, its last call done, until the last of its clique comes;
 * then every rank's work is done and the barriers answer at once.
 */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pcomm *parked;


/* p parked; the whole clique released when p is its last (the caller's
 * thread does it). */
void park(struct pcomm *p)
{
	struct pcomm **pp, *go = NULL, *q;
	int k = 0;

	pthread_mutex_lock(&park_lock);
	p->next = parked;
	parked = p;
	for (q = parked; q; q = q->next)
		k += q->clique == p->clique;
	if (k == p->n)
		for (pp = &parked; *pp;) {
			q = *pp;
			if (q->clique != p->clique) {
				pp = &q->next;
				continue;
			}
			*pp = q->next;
			q->next = go;
			go = q;
		}
	pthread_mutex_unlock(&park_lock);
	while ((q = go)) {
		go = q->next;
		q->quiet = 1;
		pcomm_fini(q);
	}
}

/*
 * A communicator how made (its rank and size where the call names them,
 * else -1; id: its unique id where the call takes one): penny's state
 * waits for its first allreduce; its rank 0 tells (a split's rank is asked
 * once it is made: not in a group, not in progress).  Made inside a group,
 * it waits for the group's end, where the ranks one thread made of one id
 * are set up at once when they are all of them (born_settle).  Returns r.
 */
static ncclResult_t track(ncclResult_t r, ncclComm_t *comm, const char *how, int rank, int n,
			  const ncclUniqueId *id)
{
	if ((seen(r) != ncclSuccess && r != ncclInProgress) || !comm || !*comm ||
	    !add(*comm, PC_PENDING))
		return r;
	cfg_read();
	if (group_depth && id && rank >= 0 && n >= 2) {
		born_add(*comm, id, rank, n, how);
		return r;
	}
	if (debug_on && rank < 0 && r == ncclSuccess && !group_depth &&
	    (R.ncclCommUserRank(*comm, &rank) || R.ncclCommCount(*comm, &n)))
		rank = -1;
	if (debug_on && rank == 0)
		tell_new(*comm, how, n, 0);
	return r;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	if (!real())
		return ncclSystemError;
	return track(R.ncclCommInitRank(comm, nranks, id, rank), comm, "ncclCommInitRank", rank,
		     nranks, &id);
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
					   ncclConfig_t *config)
{
	if (!real())
		return ncclSystemError;
	if (!R.ncclCommInitRankConfig)
		return lacks("ncclCommInitRankConfig");
	return track(R.ncclCommInitRankConfig(comm, nranks, id, rank, config), comm,
		     "ncclCommInitRankConfig", rank, nranks, &id);
}

EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nid,
					     ncclUniqueId *ids, ncclConfig_t *config)
{
	if (!real())
		return ncclSystemError;
	if (!R.ncclCommInitRankScalable)
		return lacks("ncclCommInitRankScalable");
	return track(R.ncclCommInitRankScalable(comm, nranks, rank, nid, ids, config), comm,
		     "ncclCommInitRankScalable", rank, nranks, NULL);
}

/* ncclCommInitAll's communicators are one thread's, called in groups: penny's
 * set-up runs here (inside a group: at its end), a thread a rank
 * (together()); NCCL's without memory for it. */
EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	struct pcomm **v;
	ncclResult_t r;
	int i, k = 0;

	if (!real())
		return ncclSystemError;
	if (!R.ncclCommInitAll)
		return lacks("ncclCommInitAll");
	r = seen(R.ncclCommInitAll(comm, ndev, devlist));
	if (r != ncclSuccess || !comm || ndev < 1)
		return r;
	cfg_read();
	v = calloc((size_t)ndev, sizeof(*v));
	for (i = 0; i < ndev; i++)
		if (comm[i] && add(comm[i], v ? PC_PENDING : PC_OFF) && v && (v[k] = hold(comm[i])))
			k++;
	if (group_depth && k == ndev && ndev > 1) {
		/* inside the caller's group NCCL makes them at its end: so does
		 * penny's set-up (born_settle), under an id of their own */
		ncclUniqueId id;

		memset(&id, 0, sizeof(id));
		snprintf(id.internal, sizeof(id.internal), "penny ncclCommInitAll %p", (void *)comm[0]);
		for (i = 0; i < k; i++)
			born_add(comm[i], &id, i, ndev, "ncclCommInitAll");
	} else {
		if (debug_on && k)
			tell_new(comm[0], "ncclCommInitAll", ndev, k == ndev && ndev > 1);
		if (k == ndev && ndev > 1)
			together(v, k);
	}
	for (i = 0; i < k; i++) {
		if (k < ndev)
			__atomic_store_n(&v[i]->state, PC_OFF, __ATOMIC_RELEASE);
		unhold(v[i]);
	}
	free(v);
	return r;
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				  ncclConfig_t *config)
{
	if (!real())
		return ncclSystemError;
	if (!R.ncclCommSplit)
		return lacks("ncclCommSplit");
	return track(R.ncclCommSplit(comm, color, key, newcomm, config), newcomm, "ncclCommSplit",
		     -1, -1, NULL);
}

EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excl, int nexcl, ncclComm_t *newcomm,
				   ncclConfig_t *config, int flags)
{
	if (!real())
		return ncclSystemError;
	if (!R.ncclCommShrink)
		return lacks("ncclCommShrink");
	if (flags & NCCL_SHRINK_ABORT)
		revoke_comm(comm);
	return track(R.ncclCommShrink(comm, excl, nexcl, newcomm, config, flags), newcomm,
		     "ncclCommShrink", -1, -1, NULL);
}

EXPORT ncclResult_t ncclCommGrow(ncclComm_t comm, int nranks, const ncclUniqueId *id, int rank,
				 ncclComm_t *newcomm, ncclConfig_t *config)
{
	if (!real())
		return ncclSystemError;
	if (!R.ncclCommGrow)
		return lacks("ncclCommGrow");
	return track(R.ncclCommGrow(comm, nranks, id, rank, newcomm, config), newcomm,
		     "ncclCommGrow", -1, -1, NULL);
}
