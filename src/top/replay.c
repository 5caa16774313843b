/* SPDX-License-Identifier: MIT */
/*
 * The replay index of `penny top --replay` (record.h): where each sample's
 * line of a recording is and the rates of its ports and GPUs, for the rate
 * history of the screen and for plots.  The lines themselves are read back
 * by record.c's parser.
 */
#define _GNU_SOURCE
#include "top/record.h"
#include "node/nic.h"
#include "base/util.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct rp_series {
	char name[80];
	int rail;
};

struct rp_entry {
	int series;
	int has;		/* the port had rates (live: pushed to its history) */
	float rx, tx;
};

struct rp_sample {
	off_t off;
	size_t len;
	size_t e0;		/* its entries: e[e0 .. e0 + ne) */
	int ne;
	double wall;
	double step;		/* its own elapsed (else interval): where wall goes back */
};

struct pn_replay {
	FILE *f;
	int own;
	struct rp_sample *s;
	int n;
	size_t cap;
	struct rp_entry *e;
	size_t ne, ecap;
	struct rp_series *ser;
	int nser;
	size_t sercap;
	int *hash;		/* RP_HASH_SIZE slots: series + 1, 0 empty */
	int untracked;		/* ports past RP_SERIES_MAX seen */
	int full;		/* a bound was reached: later samples are not kept */
	char warning[512];
};

/*
 * Series (ports and GPUs by name) found through a hash of their names: a
 * recording of 1,024 devices of several ports each is looked up in
 * constant time per port, not scanned (a scan per port and sample took
 * minutes).  Past RP_SERIES_MAX names, a port has no history or plot
 * series; its sample is still read (pn_replay_warning says so).
 */
#define RP_SERIES_MAX 65536
#define RP_HASH_SIZE (2 * RP_SERIES_MAX)	/* a power of two, half full at most */

static unsigned name_hash(const char *name)
{
	unsigned h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h & (RP_HASH_SIZE - 1);
}

/* the series named name, or -1; *slot: where it is or would go */
static int series_find(const struct pn_replay *r, const char *name, unsigned *slot)
{
	unsigned h = name_hash(name);

	for (; r->hash && r->hash[h]; h = (h + 1) & (RP_HASH_SIZE - 1))
		if (!strcmp(r->ser[r->hash[h] - 1].name, name))
			break;
	if (slot)
		*slot = h;
	return r->hash ? r->hash[h] - 1 : -1;
}

static int series_id(struct pn_replay *r, const char *name, int rail, int hint)
{
	struct rp_series *ns;
	unsigned slot;
	int id;

	if (hint >= 0 && hint < r->nser && !strcmp(r->ser[hint].name, name))
		return hint;
	id = series_find(r, name, &slot);
	if (id >= 0)
		return id;
	if (r->nser >= RP_SERIES_MAX)
		return -E2BIG;
	if (!r->hash && !(r->hash = calloc(RP_HASH_SIZE, sizeof(*r->hash))))
		return -ENOMEM;
	ns = pn_grow(r->ser, &r->sercap, (size_t)r->nser, sizeof(*ns), 32, RP_SERIES_MAX);
	if (!ns)
		return -ENOMEM;
	r->ser = ns;
	snprintf(r->ser[r->nser].name, sizeof(r->ser[0].name), "%s", name);
	r->ser[r->nser].rail = rail;
	r->hash[slot] = r->nser + 1;
	return r->nser++;
}

static int add_entry(struct pn_replay *r, const char *name, int rail, int has, double rx, double tx)
{
	struct rp_sample *s = &r->s[r->n];
	struct rp_entry *ne;
	int prev = -1, id;

	if (r->n > 0 && s->ne < r->s[r->n - 1].ne)
		prev = r->e[r->s[r->n - 1].e0 + (size_t)s->ne].series;
	id = series_id(r, name, rail, prev);
	if (id == -E2BIG) {
		r->untracked = 1; /* no history, no plot: the sample is kept */
		return 0;
	}
	if (id < 0)
		return id;
	if (r->ne >= PN_RECORD_ENTRIES_MAX)
		return -E2BIG;
	ne = pn_grow(r->e, &r->ecap, r->ne, sizeof(*ne), 256, PN_RECORD_ENTRIES_MAX);
	if (!ne)
		return -ENOMEM;
	r->e = ne;
	r->e[r->ne++] = (struct rp_entry){ id, has, (float)rx, (float)tx };
	s->ne++;
	return 0;
}

/* Index one sample (its line at off, len; 0, 0 live).  -E2BIG at a bound. */
static int add_sample(struct pn_replay *r, const struct pn_counters_set *v,
		      const struct pn_nodectx *ctx, const struct pn_record_gpu *gpus, int ngpus,
		      off_t off, size_t len)
{
	struct rp_sample *ns;
	size_t e0 = r->ne;
	int i, ret = 0;

	if (r->full || r->n >= PN_RECORD_SAMPLES_MAX)
		return -E2BIG;
	ns = pn_grow(r->s, &r->cap, (size_t)r->n, sizeof(*ns), 64, PN_RECORD_SAMPLES_MAX);
	if (!ns)
		return -ENOMEM;
	r->s = ns;
	r->s[r->n] = (struct rp_sample){ off, len, e0, 0, v->wall,
					 v->elapsed > 0 ? v->elapsed : v->interval };
	for (i = 0; i < v->n && !ret; i++) {
		const struct pn_counters_port *p = &v->ports[i];
		const struct pn_nicctx *x = pn_nodectx_port(ctx, p);

		ret = add_entry(r, p->name, x ? x->rail : -1, p->nsamples > 1, p->rx_Bps, p->tx_Bps);
	}
	for (i = 0; i < ngpus && !ret; i++) {
		char name[32];

		snprintf(name, sizeof(name), "GPU%d", gpus[i].index);
		ret = add_entry(r, name, -2, 1, gpus[i].nvlink_rx_Bps, gpus[i].nvlink_tx_Bps);
	}
	if (ret) {
		r->ne = e0;
		if (ret == -E2BIG)
			r->full = 1;
		return ret;
	}
	r->n++;
	return 0;
}

int pn_replay_new(struct pn_replay **rp)
{
	*rp = calloc(1, sizeof(**rp));
	return *rp ? 0 : pn_err(-ENOMEM, "out of memory");
}

int pn_replay_add(struct pn_replay *r, const struct pn_counters_set *v,
		  const struct pn_nodectx *ctx, const struct pn_record_gpu *gpus, int ngpus)
{
	int ret;

	if (r->full)
		return 0;
	ret = add_sample(r, v, ctx, gpus, ngpus, 0, 0);
	if (ret == -E2BIG)
		return pn_err(ret, "the plot keeps the first %d samples", r->n);
	if (ret)
		return pn_err(ret, "out of memory");
	return 0;
}

/*
 * One line into *buf (without its newline), at most PN_RECORD_LINE_MAX
 * bytes, NUL bytes included (a file system's NUL-filled tail after a crash
 * is damage, to be seen as such).  1: a line; 2: the last line, without a
 * newline; 0: end of file; -E2BIG: too long (the rest of it is read past,
 * not kept); -EIO: read error.
 */
static int read_line(FILE *f, char **buf, size_t *cap, size_t *len)
{
	int c;

	*len = 0;
	while ((c = getc_unlocked(f)) != EOF && c != '\n') {
		if (*len >= PN_RECORD_LINE_MAX) {
			while ((c = getc_unlocked(f)) != EOF && c != '\n')
				;
			return ferror(f) ? -EIO : -E2BIG;
		}
		if (*len + 2 > *cap) {
			size_t nc = *cap ? 2 * *cap : 65536;
			char *nb = realloc(*buf, nc);

			if (!nb)
				return -ENOMEM;
			*buf = nb;
			*cap = nc;
		}
		(*buf)[(*len)++] = (char)c;
	}
	if (*buf)
		(*buf)[*len] = 0;
	if (c == '\n')
		return 1;
	return ferror(f) ? -EIO : *len ? 2 : 0;
}

/* The damaged lines a reading skipped, said in one warning. */
struct damage {
	int n, first;		/* lines skipped, the number of the first */
	char why[256];		/* "line N: what was wrong" of the first */
};

static void damaged(struct damage *d, int lineno, int last, const char *why)
{
	if (!d->n++) {
		d->first = lineno;
		snprintf(d->why, sizeof(d->why), "line %d%s: %s", lineno,
			 last ? " (the last, cut short)" : "", why);
	}
}

static void say_damage(struct pn_replay *r, const struct damage *d, const char *name,
		       const char *stop)
{
	char head[384] = "";

	if (d->n == 1)
		snprintf(head, sizeof(head), "%s: %s; skipped it", name, d->why);
	else if (d->n > 1)
		snprintf(head, sizeof(head), "%s: %d damaged lines skipped, the first %s", name,
			 d->n, d->why);
	snprintf(r->warning, sizeof(r->warning), "%s%s%s", head, *head && *stop ? "; " : "", stop);
}

int pn_replay_open_file(struct pn_replay **rp, FILE *f, const char *name)
{
	struct pn_record_sample *s = malloc(sizeof(*s));
	struct pn_replay *r;
	struct damage d = { 0, 0, "" };
	char *line = NULL, stop[256] = "";
	size_t cap = 0, len;
	int ret = 0, lineno = 0;

	*rp = NULL;
	if (!s || pn_replay_new(&r)) {
		free(s);
		return pn_err(-ENOMEM, "out of memory");
	}
	pn_record_sample_init(s);
	r->f = f;
	for (;;) {
		off_t off = ftello(f);
		int got = read_line(f, &line, &cap, &len);

		if (got == 0)
			break;
		lineno++;
		if (got == -ENOMEM) {
			ret = pn_err(got, "out of memory");
			break;
		}
		if (got == -EIO) {
			snprintf(stop, sizeof(stop), "%s: line %d: read error; read up to there",
				 name, lineno);
			break;
		}
		if (got == -E2BIG) {
			damaged(&d, lineno, 0, "longer than the longest sample");
			continue;
		}
		/* a damaged line (cut, not JSON, not a sample) is skipped: the
		 * samples after it, appended later, are read */
		ret = pn_record_parse(s, line, len);
		if (ret == -ENOMEM)
			break;
		if (ret) {
			damaged(&d, lineno, got == 2, pn_errmsg(ret));
			ret = 0;
			continue;
		}
		ret = add_sample(r, &s->set, &s->ctx, s->gpus, s->ngpus, off, len);
		if (ret == -E2BIG) {
			snprintf(stop, sizeof(stop),
				 "%s: more samples than penny keeps; the first %d read", name, r->n);
			ret = 0;
			break;
		}
		if (ret) {
			ret = pn_err(ret, "out of memory");
			break;
		}
	}
	if (r->untracked && !*stop)
		snprintf(stop, sizeof(stop), "%s: more than %d ports and GPUs; the others have "
			 "no history or plot", name, RP_SERIES_MAX);
	say_damage(r, &d, name, stop);
	free(line);
	pn_record_sample_release(s);
	free(s);
	if (ret) {
		r->f = NULL;
		pn_replay_close(r);
		return ret;
	}
	*rp = r;
	return 0;
}

int pn_replay_open(struct pn_replay **rp, const char *path)
{
	struct stat st;
	FILE *f;
	int fd, ret;

	*rp = NULL;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return pn_err(-errno, "cannot read '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return pn_err(-EINVAL, "cannot replay '%s': not a regular file", path);
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return pn_err(-ENOMEM, "out of memory");
	}
	ret = pn_replay_open_file(rp, f, path);
	if (ret) {
		fclose(f);
		return ret;
	}
	(*rp)->own = 1;
	return 0;
}

void pn_replay_close(struct pn_replay *r)
{
	if (!r)
		return;
	if (r->own && r->f)
		fclose(r->f);
	free(r->s);
	free(r->e);
	free(r->ser);
	free(r->hash);
	free(r);
}

int pn_replay_count(const struct pn_replay *r)
{
	return r ? r->n : 0;
}

const char *pn_replay_warning(const struct pn_replay *r)
{
	return r ? r->warning : "";
}

/* the rate history of p up to sample i, as the live sampler kept it */
static void fill_hist(const struct pn_replay *r, int i, int pos, struct pn_counters_port *p)
{
	int j = i - PN_COUNTERS_HIST + 1, id = series_find(r, p->name, NULL), k;

	p->hist_n = p->hist_head = 0;
	if (id < 0)
		return;
	for (j = j < 0 ? 0 : j; j <= i; j++) {
		const struct rp_sample *s = &r->s[j];
		const struct rp_entry *e = NULL;

		if (pos < s->ne && r->e[s->e0 + (size_t)pos].series == id)
			e = &r->e[s->e0 + (size_t)pos];
		for (k = 0; !e && k < s->ne; k++)
			if (r->e[s->e0 + (size_t)k].series == id)
				e = &r->e[s->e0 + (size_t)k];
		if (!e || !e->has)
			continue;
		p->hist_rx[p->hist_head] = e->rx;
		p->hist_tx[p->hist_head] = e->tx;
		p->hist_head = (p->hist_head + 1) % PN_COUNTERS_HIST;
		if (p->hist_n < PN_COUNTERS_HIST)
			p->hist_n++;
	}
}

int pn_replay_load(struct pn_replay *r, int i, struct pn_record_sample *s)
{
	char *line;
	int ret, k;

	if (!r->f || i < 0 || i >= r->n)
		return pn_err(-EINVAL, "no sample %d in the recording", i + 1);
	line = malloc(r->s[i].len + 1);
	if (!line)
		return pn_err(-ENOMEM, "out of memory");
	if (fseeko(r->f, r->s[i].off, SEEK_SET) || fread(line, 1, r->s[i].len, r->f) != r->s[i].len) {
		free(line);
		return pn_err(-EIO, "cannot read the recording again: %s", strerror(errno ? errno : EIO));
	}
	ret = pn_record_parse(s, line, r->s[i].len);
	free(line);
	if (ret)
		return pn_err_ctx(ret, "the recording changed while it was replayed");
	for (k = 0; k < s->set.n; k++)
		fill_hist(r, i, k, &s->set.ports[k]);
	return 0;
}

int pn_replay_series(const struct pn_replay *r, struct pn_replay_series **out, int *n)
{
	struct pn_replay_series *ss;
	double t = 0;
	int i, k;

	*out = NULL;
	*n = 0;
	if (!r->nser)
		return 0;
	ss = calloc((size_t)r->nser, sizeof(*ss));
	if (!ss)
		return pn_err(-ENOMEM, "out of memory");
	for (k = 0; k < r->nser; k++) {
		ss[k].name = r->ser[k].name;
		ss[k].rail = r->ser[k].rail;
	}
	for (i = 0; i < r->n; i++)
		for (k = 0; k < r->s[i].ne; k++)
			ss[r->e[r->s[i].e0 + (size_t)k].series].npts++;
	for (k = 0; k < r->nser; k++) {
		size_t m = (size_t)(ss[k].npts ? ss[k].npts : 1);

		ss[k].t = malloc(m * sizeof(double));
		ss[k].rx = malloc(m * sizeof(double));
		ss[k].tx = malloc(m * sizeof(double));
		if (!ss[k].t || !ss[k].rx || !ss[k].tx) {
			pn_replay_series_free(ss, r->nser);
			return pn_err(-ENOMEM, "out of memory");
		}
		ss[k].npts = 0;
	}
	for (i = 0; i < r->n; i++) {
		/*
		 * The x axis only goes forward: where the wall clock went back
		 * (set by hand, NTP stepping), the sample follows the one before
		 * it by its own elapsed time.
		 */
		if (i > 0) {
			double d = r->s[i].wall - r->s[i - 1].wall;

			t += d > 0 ? d : r->s[i].step;
		}
		for (k = 0; k < r->s[i].ne; k++) {
			const struct rp_entry *e = &r->e[r->s[i].e0 + (size_t)k];
			struct pn_replay_series *x = &ss[e->series];

			x->t[x->npts] = t;
			x->rx[x->npts] = e->has ? e->rx : NAN;
			x->tx[x->npts] = e->has ? e->tx : NAN;
			x->npts++;
		}
	}
	*out = ss;
	*n = r->nser;
	return 0;
}

void pn_replay_series_free(struct pn_replay_series *s, int n)
{
	int k;

	for (k = 0; s && k < n; k++) {
		free(s[k].t);
		free(s[k].rx);
		free(s[k].tx);
	}
	free(s);
}
