/* SPDX-License-Identifier: MIT */
/*
 * Ring planner properties over random cluster shapes (seeded; PENNY_PROP_SEED
 * and PENNY_PROP_N override): nodes, GPUs, NICs, GPUs per NIC, NVLink or
 * PCIe, ports down on random nodes, GPUs without a rail.  For every shape
 * that can be planned: each ring visits every rank once, no hop leaves its
 * rail, every usable NIC sends and receives for exactly one ring per round,
 * the rails used are exactly those usable everywhere, the validator agrees,
 * and the NCCL graph files read back to the same rings.  Random damage to a
 * valid plan is always caught by the validator.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/log.h"
#include "plan/plan.h"
#include "t_plan_check.h"

#include <errno.h>
#include <stdlib.h>

static unsigned long long rng_state;

static unsigned rnd(unsigned n)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)((rng_state >> 33) % (n ? n : 1));
}

static int iterations(void)
{
	const char *s = getenv("PENNY_PROP_N");

	return s && atoi(s) > 0 ? atoi(s) : 300;
}

/* Give node its own copy of its layout and return it (before pn_plan_model_finish). */
static struct pn_plan_layout *own_layout(struct pn_plan_model *m, int node)
{
	struct pn_plan_layout l = m->layouts[m->nodes[node].layout];
	int li;

	l.nics = malloc(sizeof(*l.nics) * (size_t)(l.nnics ? l.nnics : 1));
	l.gn = malloc(sizeof(*l.gn) * (size_t)(l.nnics * l.ngpus + 1));
	if (l.nnics) {
		memcpy(l.nics, m->layouts[m->nodes[node].layout].nics,
		       sizeof(*l.nics) * (size_t)l.nnics);
		memcpy(l.gn, m->layouts[m->nodes[node].layout].gn,
		       sizeof(*l.gn) * (size_t)(l.nnics * l.ngpus));
	}
	l.best = NULL;
	l.nbest = l.capbest = 0;
	li = pn_plan_model_add_layout(m, &l);
	if (li < 0)
		return NULL;
	m->nodes[node].layout = li;
	return &m->layouts[li];
}

/* Rails with an active NIC on every node, computed here without the planner. */
static int usable_rails(const struct pn_plan_model *m, int *out)
{
	int r, i, k, n = 0;

	for (r = 0; r < 64; r++) {
		int ok = 1;

		for (i = 0; i < m->nnodes && ok; i++) {
			const struct pn_plan_layout *l = &m->layouts[m->nodes[i].layout];
			int hit = 0;

			for (k = 0; k < l->nnics; k++)
				hit |= l->nics[k].active && l->nics[k].rail == r;
			ok = hit;
		}
		if (ok)
			out[n++] = r;
	}
	return n;
}

struct shape {
	int N, G, K, M, nv, down, norail;
};

static void describe(const struct shape *s, char *buf, size_t len)
{
	snprintf(buf, len, "N=%d G=%d K=%d M=%d nv=%d down=%d norail=%d", s->N, s->G, s->K, s->M,
		 s->nv, s->down, s->norail);
}

static int make_model(struct pn_plan_model *m, const struct shape *s)
{
	struct pn_plan_synth sy = { .nodes = s->N, .gpus = s->G, .nics = s->K,
				    .gpus_per_nic = s->M, .rate_gbps = 100 + rnd(4) * 100,
				    .nvlinks = s->nv };
	int i, ret;

	pn_plan_model_init(m);
	ret = pn_plan_model_synthetic(m, &sy);
	if (ret)
		return ret;
	for (i = 0; i < s->down && s->K; i++) {
		struct pn_plan_layout *l = own_layout(m, (int)rnd((unsigned)s->N));
		int k = (int)rnd((unsigned)s->K);

		if (!l)
			return -ENOMEM;
		l->nics[k].active = 0;
		snprintf(l->nics[k].state, sizeof(l->nics[k].state), "DOWN");
	}
	for (i = 0; i < s->norail; i++) {
		struct pn_plan_layout *l = own_layout(m, (int)rnd((unsigned)s->N));

		if (!l)
			return -ENOMEM;
		l->gpus[rnd((unsigned)s->G)].near = 0;
	}
	return pn_plan_model_finish(m);
}

static char *xml(const struct pn_plan *p, int node, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	int ret = pn_plan_write_nccl(p, node, f);

	fclose(f);
	if (ret) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int same_rings(const struct pn_plan *a, const struct pn_plan *b)
{
	int r, i;

	if (a->nrings != b->nrings)
		return 0;
	for (r = 0; r < a->nrings; r++) {
		const struct pn_plan_ring *x = &a->rings[r], *y = &b->rings[r];

		for (i = 0; i < x->nseg; i++) {
			const struct pn_plan_seg *s = &x->seg[i], *t = &y->seg[i];

			if (s->node != t->node || s->in_nic != t->in_nic || s->out_nic != t->out_nic ||
			    s->n != t->n ||
			    memcmp(x->gpus + s->off, y->gpus + t->off, sizeof(int) * (size_t)s->n))
				return 0;
		}
	}
	return 1;
}

/* NCCL graph files (shared when possible, else one per node) read back to the same rings. */
static int xml_round_trip(struct pn_plan *p)
{
	struct pn_plan q;
	struct pn_plan_msgs n = { 0 }, v = { 0 };
	int N = p->model->nnodes, shared = !pn_plan_nccl_shared_ok(p), nf = shared ? 1 : N, i;
	char **t = calloc((size_t)nf, sizeof(char *));
	size_t *len = calloc((size_t)nf, sizeof(size_t));
	const char **names = calloc((size_t)nf, sizeof(char *));
	int ok = 1;

	for (i = 0; i < nf; i++) {
		t[i] = xml(p, shared ? -1 : i, &len[i]);
		names[i] = "x.xml";
		ok &= t[i] != NULL;
	}
	if (ok)
		ok = !pn_plan_read_nccl(&q, p->model, (const char *const *)t, len, names, nf, &n, &v);
	if (ok) {
		ok = same_rings(p, &q) && v.n == 0;
		pn_plan_release(&q);
	}
	for (i = 0; i < nf; i++)
		free(t[i]);
	free(t);
	free(len);
	free(names);
	pn_plan_msgs_release(&n);
	pn_plan_msgs_release(&v);
	return ok;
}

/* Break a valid plan at random; the validator must notice (returns 1 when it does). */
static int mutation_caught(struct pn_plan *p)
{
	struct pn_plan_msgs v = { 0 };
	struct pn_plan_ring *ring = &p->rings[rnd((unsigned)p->nrings)];
	struct pn_plan_seg *s = &ring->seg[rnd((unsigned)ring->nseg)], *t;
	int kind = (int)rnd(3), found, saved, k, i;

	if (kind == 2 && (p->model->nnodes < 2 || p->nrails < 2))
		kind = 0;
	if (kind == 1) {
		t = &ring->seg[(s - ring->seg + 1) % ring->nseg];
		if (t == s || lay(p, t->node)->ngpus != lay(p, s->node)->ngpus ||
		    lay(p, t->node)->nnics != lay(p, s->node)->nnics)
			kind = 0;
	}
	if (kind == 0) {
		for (i = 0; i < ring->nseg && ring->seg[i].n < 2; i++)
			;
		if (i == ring->nseg) { /* one GPU per node: leave a node out */
			if (ring->nseg < 2)
				return 1; /* a single GPU in all: nothing to break */
			ring->nseg--;
			found = pn_plan_validate(p, &v);
			ring->nseg++;
		} else { /* a GPU twice, another never */
			s = &ring->seg[i];
			k = 1 + (int)rnd((unsigned)(s->n - 1));
			saved = ring->gpus[s->off + k];
			ring->gpus[s->off + k] = ring->gpus[s->off];
			found = pn_plan_validate(p, &v);
			ring->gpus[s->off + k] = saved;
		}
	} else if (kind == 1) { /* a node passed twice, the next one never */
		t = &ring->seg[(s - ring->seg + 1) % ring->nseg];
		saved = t->node;
		t->node = s->node;
		found = pn_plan_validate(p, &v);
		t->node = saved;
	} else { /* send on the NIC of another usable rail */
		const struct pn_plan_layout *l = lay(p, s->node);
		int other;

		do
			other = p->rails[rnd((unsigned)p->nrails)];
		while (other == l->nics[s->out_nic].rail);
		saved = s->out_nic;
		s->out_nic = pn_plan_layout_nic_on_rail(l, other);
		pn_plan_analyze(p, 0);
		found = pn_plan_validate(p, &v);
		s->out_nic = saved;
	}
	pn_plan_analyze(p, 0);
	pn_plan_msgs_release(&v);
	return found > 0;
}

TEST(random_shapes)
{
	const char *seed_env = getenv("PENNY_PROP_SEED");
	unsigned long long seed = seed_env ? strtoull(seed_env, NULL, 0) : 20261121;
	int it, n = iterations(), planned = 0, refused = 0, degraded = 0, odd = 0;

	rng_state = seed;
	for (it = 0; it < n; it++) {
		struct pn_plan_model m;
		struct pn_plan p;
		struct pn_plan_msgs v = { 0 };
		struct pn_plan_opts o = { 0 };
		struct shape s;
		int rails[64], nr, ret, i, bad = 0;
		char d[160];

		s.N = 1 + (int)(rnd(4) ? rnd(12) : rnd(64));
		s.G = 1 + (int)(rnd(5) ? rnd(8) : rnd(12));
		s.K = (int)rnd(3) ? (int)rnd(13) : s.G;
		s.M = s.K && rnd(3) == 0 ? 1 + (int)rnd((unsigned)s.G) : 0;
		if (s.M && s.M * s.K < s.G)
			s.M = 0;
		s.nv = rnd(4) ? 18 : 0;
		s.down = rnd(3) == 0 ? 1 + (int)rnd(3) : 0;
		s.norail = rnd(4) == 0 ? 1 + (int)rnd(2) : 0;
		describe(&s, d, sizeof(d));
		ret = make_model(&m, &s);
		if (ret) {
			printf("#   seed %llu it %d %s: model: %s\n", seed, it, d, pn_errmsg(ret));
			CHECK(0);
			pn_plan_model_release(&m);
			continue;
		}
		nr = usable_rails(&m, rails);
		ret = pn_plan_build(&p, &m, &o);
		if (ret) {
			/* refused only when several nodes share no usable rail */
			if (!(s.N > 1 && nr == 0)) {
				printf("#   seed %llu it %d %s: refused: %s\n", seed, it, d, pn_errmsg(ret));
				bad++;
			}
			refused++;
		} else {
			planned++;
			degraded += p.degraded;
			odd += s.N % 2 && s.N > 1;
			if (!visits_all_once(&p)) {
				printf("#   %s: a ring misses or repeats a rank\n", d);
				bad++;
			}
			if (s.N > 1) {
				if (!hops_on_rail(&p)) {
					printf("#   %s: a hop changes rail\n", d);
					bad++;
				}
				if (!loads_are(&p, 1)) {
					printf("#   %s: NIC load not 1 send + 1 receive\n", d);
					bad++;
				}
				if (p.nrails != nr || memcmp(p.rails, rails, sizeof(int) * (size_t)nr)) {
					printf("#   %s: rails in use differ from the usable ones\n", d);
					bad++;
				}
				if (p.nrings != nr) {
					printf("#   %s: %d rings for %d rails\n", d, p.nrings, nr);
					bad++;
				}
			}
			ret = pn_plan_validate(&p, &v);
			if (ret != 0) {
				printf("#   %s: validator: %s\n", d, v.n ? v.v[0] : "error");
				bad++;
			}
			if (s.N <= 16 && !xml_round_trip(&p)) {
				printf("#   %s: NCCL graph XML does not read back\n", d);
				bad++;
			}
			for (i = 0; i < 3; i++) {
				if (!mutation_caught(&p)) {
					printf("#   %s: a damaged plan passed validation\n", d);
					bad++;
					break;
				}
			}
			pn_plan_msgs_release(&v);
		}
		if (bad)
			printf("#   (seed %llu, iteration %d)\n", seed, it);
		CHECK(!bad);
		pn_plan_release(&p);
		pn_plan_model_release(&m);
	}
	printf("# %d shapes: %d planned (%d degraded, %d with an odd node count), %d refused\n", n,
	       planned, degraded, odd, refused);
	CHECK(planned > n / 2 && degraded > 0 && odd > 0 && refused > 0);
}

TEST(sixteen_gpus_exact_search)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_msgs v = { 0 };
	struct pn_plan_opts o = { 0 };
	struct shape s = { .N = 3, .G = 16, .K = 16, .M = 0, .nv = 0 };

	rng_state = 7;
	CHECK(!make_model(&m, &s));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK(visits_all_once(&p) && hops_on_rail(&p) && loads_are(&p, 1));
	CHECK_EQ_INT(pn_plan_validate(&p, &v), 0);
	pn_plan_msgs_release(&v);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

int main(void)
{
	RUN(random_shapes);
	RUN(sixteen_gpus_exact_search);
	return unit_done();
}
