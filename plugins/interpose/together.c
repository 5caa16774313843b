/* SPDX-License-Identifier: MIT */
/*
 * Communicators one thread made every rank of: ncclCommInitAll's, or the
 * ncclCommInitRank(Config) calls of one id in one group that cover all its
 * ranks (nccl-tests makes its communicators so, for -g and -t alike).  The
 * thread that made them drives them with grouped calls (nccl-tests' -g
 * N), so penny's set-up, a host exchange every rank enters at once (over
 * NCCL's all-gathers on the real communicators), can never wait for the
 * first allreduce outside a group there: it runs when they are made, on a
 * thread for each rank, and returns when every rank's is done.  No rank of
 * such a communicator lives in another process, so no other process waits
 * on a set-up that would come later.  Calls inside groups on them are then
 * penny's as the plugin's kernels are enqueued without the host (the
 * caller's thread only launches them, one rank after another).
 */
#define _GNU_SOURCE
#include "interpose.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

void born_add(ncclComm_t c, const ncclUniqueId *id, int rank, int n, const char *how)
{
	struct born *more;

	if (nborn == born_room && born_room < BORN_MAX &&
	    (more = realloc(born, (size_t)(born_room + 16) * sizeof(*born)))) {
		born = more;
		born_room += 16;
	}
	if (nborn == born_room) {
		/* not remembered: its set-up waits for its first call outside a group */
		if (debug_on && rank == 0)
			tell_new(c, how, n, 0);
		return;
	}
	born[nborn++] = (struct born){ .c = c, .id = *id, .rank = rank, .n = n, .how = how };
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
		v[i]->together = v[i]->state == PC_ON;
}

/* The communicators of born[0..n) that make up the whole of born[at]'s id,
 * held, into v (their number; 0: not all of them, or not all ready). */
static int whole(int at, int n, struct pcomm **v)
{
	const struct born *b = &born[at];
	char *seen = calloc((size_t)b->n, 1);
	int i, k = 0, bad = !seen;
	ncclResult_t ae;

	for (i = at; i < n && !bad; i++) {
		if (born[i].n != b->n || memcmp(&born[i].id, &b->id, sizeof(b->id)))
			continue;
		if (born[i].rank < 0 || born[i].rank >= b->n || seen[born[i].rank]++ || k == b->n) {
			bad = 1;
			break;
		}
		/* made (a non-blocking communicator may still be on its way) */
		if (real_async_error(born[i].c, &ae) || ae != ncclSuccess || !(v[k] = hold(born[i].c))) {
			bad = 1;
			break;
		}
		if (v[k++]->state != PC_PENDING)
			bad = 1;
	}
	free(seen);
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
