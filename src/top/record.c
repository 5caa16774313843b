/* SPDX-License-Identifier: MIT */
/*
 * The flight recorder of `penny top` (record.h): the writer of one JSON
 * line per sample (bounded file, one rotation to FILE.1), the parser of a
 * line back into a counter snapshot and node context.  The replay index
 * over a recording's lines is replay.c.
 */
#define _GNU_SOURCE
#include "top/record.h"
#include "node/nic.h"
#include "base/util.h"
#include "base/log.h"
#include "base/minijson.h"
#include "base/ofile.h"
#include "base/out.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- writer ---- */

struct pn_record {
	char *path;
	int fd;
	int inplace;		/* standard output or error: never rotated */
	int stopped;
	int rotations;
	uint64_t max, size, total;
	char *buf;
	size_t cap, len;
};

struct sbuf {
	char **buf;
	size_t *cap, len;
	int err;
};

static void sb_grow(struct sbuf *b, size_t need)
{
	size_t cap;
	char *nb;

	if (b->err || b->len + need + 1 <= *b->cap)
		return;
	cap = *b->cap ? *b->cap : 4096;
	while (cap < b->len + need + 1)
		cap *= 2;
	nb = realloc(*b->buf, cap);
	if (!nb) {
		b->err = -ENOMEM;
		return;
	}
	*b->buf = nb;
	*b->cap = cap;
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	sb_grow(b, 64);
	if (b->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(*b->buf + b->len, *b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = -EINVAL;
		return;
	}
	if ((size_t)n >= *b->cap - b->len) {
		sb_grow(b, (size_t)n);
		if (b->err)
			return;
		va_start(ap, fmt);
		vsnprintf(*b->buf + b->len, *b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

/*
 * s as a JSON string that reads back into a char[len] (get_str): a byte
 * that is no UTF-8 is written as U+FFFD, three bytes when read back, so a
 * name of such bytes (a hostile tree's) is cut, at a character, to what its
 * reader holds, and the recording of it still replays.
 */
static void sb_str(struct sbuf *b, const char *s, size_t len)
{
	char cut[256];
	size_t i = 0, back = 0, n;

	s = s ? s : "";
	while (s[i]) {
		int u = pn_utf8_len(s + i);

		if (back + (u ? (size_t)u : 3) >= (len < sizeof(cut) ? len : sizeof(cut)))
			break;
		back += u ? (size_t)u : 3;
		i += u ? (size_t)u : 1;
	}
	memcpy(cut, s, i);
	cut[i] = 0;
	n = pn_json_escape(NULL, 0, cut);
	sb_grow(b, n + 2);
	if (b->err)
		return;
	(*b->buf)[b->len++] = '"';
	pn_json_escape(*b->buf + b->len, n + 1, cut);
	b->len += n;
	(*b->buf)[b->len++] = '"';
	(*b->buf)[b->len] = 0;
}

static void sb_key(struct sbuf *b, const char *key, int comma)
{
	sb_printf(b, "%s\"%s\":", comma ? "," : "", key);
}

static void sb_dbl(struct sbuf *b, double v)
{
	if (isfinite(v))
		sb_printf(b, "%.17g", v);
	else
		sb_printf(b, "null");
}

/* exact in a JSON number (a double) up to 2^53; above, a decimal string */
static void sb_u64(struct sbuf *b, uint64_t v)
{
	if (v <= (1ull << 53))
		sb_printf(b, "%llu", (unsigned long long)v);
	else
		sb_printf(b, "\"%llu\"", (unsigned long long)v);
}

static void fmt_port(struct sbuf *b, const struct pn_counters_port *p)
{
	int i;

	sb_printf(b, "{\"name\":");
	sb_str(b, p->name, sizeof(p->name));
	sb_key(b, "dev", 1);
	sb_str(b, p->dev, sizeof(p->dev));
	sb_printf(b, ",\"port\":%d,\"type\":%d,\"lid\":%d,\"state\":%d,\"state_name\":", p->port,
		  p->type, p->lid, p->state);
	sb_str(b, p->state_name, sizeof(p->state_name));
	sb_key(b, "phys_state", 1);
	sb_str(b, p->phys_state, sizeof(p->phys_state));
	sb_key(b, "rate", 1);
	sb_str(b, p->rate, sizeof(p->rate));
	sb_key(b, "rate_gbps", 1);
	sb_dbl(b, p->rate_gbps);
	sb_key(b, "link_layer", 1);
	sb_str(b, p->link_layer, sizeof(p->link_layer));
	sb_key(b, "netdev", 1);
	sb_str(b, p->netdev, sizeof(p->netdev));
	sb_printf(b, ",\"data_group\":%d,\"nsamples\":", p->data_group);
	sb_u64(b, p->nsamples);
	sb_key(b, "t_ns", 1);
	sb_u64(b, p->t_ns);
	sb_key(b, "elapsed", 1);
	sb_dbl(b, p->elapsed);
	sb_key(b, "rx_Bps", 1);
	sb_dbl(b, p->rx_Bps);
	sb_key(b, "tx_Bps", 1);
	sb_dbl(b, p->tx_Bps);
	sb_key(b, "rx_pps", 1);
	sb_dbl(b, p->rx_pps);
	sb_key(b, "tx_pps", 1);
	sb_dbl(b, p->tx_pps);
	sb_key(b, "util", 1);
	sb_dbl(b, p->util);
	sb_key(b, "err", 1);
	if (p->err_valid)
		sb_u64(b, p->err_delta);
	else
		sb_printf(b, "null");
	sb_key(b, "disc", 1);
	if (p->disc_valid)
		sb_u64(b, p->disc_delta);
	else
		sb_printf(b, "null");
	sb_key(b, "err_total", 1);
	sb_u64(b, p->err_total);
	sb_key(b, "disc_total", 1);
	sb_u64(b, p->disc_total);
	sb_printf(b, ",\"unreadable\":%d,\"flags\":%u,\"ix\":[", p->nunreadable, p->flags);
	for (i = 0; i < PN_CK_COUNT; i++)
		sb_printf(b, "%s%d", i ? "," : "", p->ix[i]);
	sb_printf(b, "],\"ctr\":[");
	for (i = 0; i < p->nctr; i++) {
		const struct pn_counter *c = &p->ctr[i];

		sb_printf(b, "%s[%u,", i ? "," : "", c->group);
		sb_str(b, c->name, sizeof(c->name));
		sb_printf(b, ",%u,%u,%u,%u,%u,", c->kind, c->scale, c->width, c->flags, c->wraps);
		sb_u64(b, c->raw);
		sb_printf(b, ",");
		sb_u64(b, c->value);
		sb_printf(b, ",");
		sb_u64(b, c->delta);
		sb_printf(b, "]");
	}
	sb_printf(b, "]}");
}

int pn_record_format(char **buf, size_t *cap, size_t *len, const struct pn_counters_set *v,
		     const struct pn_nodectx *ctx, const char *host, double interval,
		     const struct pn_record_gpu *gpus, int ngpus)
{
	struct sbuf b = { buf, cap, 0, 0 };
	int i, k;

	sb_printf(&b, "{\"penny_record\":%d,\"host\":", PN_RECORD_VERSION);
	sb_str(&b, host, sizeof(((struct pn_record_sample *)0)->host));
	sb_key(&b, "seq", 1);
	sb_u64(&b, v->seq);
	sb_key(&b, "mono_ns", 1);
	sb_u64(&b, v->t_ns);
	sb_key(&b, "wall", 1);
	sb_dbl(&b, v->wall);
	sb_key(&b, "interval", 1);
	sb_dbl(&b, interval);
	sb_key(&b, "elapsed", 1);
	sb_dbl(&b, v->elapsed);
	sb_printf(&b, ",\"ngpus\":%d,\"note\":", ctx ? ctx->ngpus : 0);
	sb_str(&b, ctx ? ctx->note : "", sizeof(ctx->note));
	sb_printf(&b, ",\"nics\":[");
	for (i = 0; ctx && i < ctx->nnics; i++) {
		const struct pn_nicctx *n = &ctx->nics[i];

		sb_printf(&b, "%s{\"dev\":", i ? "," : "");
		sb_str(&b, n->dev, sizeof(n->dev));
		sb_printf(&b, ",\"numa\":%d,\"rail\":%d,\"gpus\":[", n->numa, n->rail);
		for (k = 0; k < n->ngpus && k < PN_NODECTX_GPUS; k++)
			sb_printf(&b, "%s%d", k ? "," : "", n->gpu[k]);
		sb_printf(&b, "]}");
	}
	sb_printf(&b, "],\"ports\":[");
	for (i = 0; i < v->n; i++) {
		if (i)
			sb_printf(&b, ",");
		fmt_port(&b, &v->ports[i]);
	}
	sb_printf(&b, "]");
	if (gpus && ngpus > 0) {
		sb_printf(&b, ",\"gpus\":[");
		for (i = 0; i < ngpus && i < PN_RECORD_GPUS_MAX; i++) {
			const struct pn_record_gpu *g = &gpus[i];

			sb_printf(&b, "%s{\"index\":%d,\"name\":", i ? "," : "", g->index);
			sb_str(&b, g->name, sizeof(g->name));
			sb_key(&b, "nvlink_tx_Bps", 1);
			sb_dbl(&b, g->nvlink_tx_Bps);
			sb_key(&b, "nvlink_rx_Bps", 1);
			sb_dbl(&b, g->nvlink_rx_Bps);
			sb_key(&b, "pcie_tx_Bps", 1);
			sb_dbl(&b, g->pcie_tx_Bps);
			sb_key(&b, "pcie_rx_Bps", 1);
			sb_dbl(&b, g->pcie_rx_Bps);
			sb_printf(&b, "}");
		}
		sb_printf(&b, "]");
	}
	sb_printf(&b, "}\n");
	if (b.err)
		return pn_err(b.err, "out of memory");
	*len = b.len;
	return 0;
}

/*
 * A recording whose last line was cut (a full disk, a crash) gets that line
 * closed before the first new sample, so that the damage stays one line
 * the reader skips.  The last byte is read through a second descriptor of
 * the same file (fd is write-only); 0, or -errno (message set).
 */
static int close_cut_line(int fd, const char *path, uint64_t *size)
{
	struct stat a, b;
	char c = '\n';
	int rfd, ret = 0;

	if (fstat(fd, &a) || !S_ISREG(a.st_mode) || a.st_size == 0)
		return 0;
	rfd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (rfd < 0)
		return 0; /* not readable: appended to as it is */
	if (!fstat(rfd, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
	    pread(rfd, &c, 1, a.st_size - 1) == 1 && c != '\n') {
		if (write(fd, "\n", 1) != 1)
			ret = pn_err(-errno, "cannot write '%s': %s", path, strerror(errno));
		else
			*size = (uint64_t)a.st_size + 1;
	}
	close(rfd);
	return ret;
}

int pn_record_open(struct pn_record **rp, const char *path, uint64_t max_bytes)
{
	struct pn_record *r;
	struct stat st;
	int fd, ret;

	*rp = NULL;
	fd = pn_ofile_append(path);
	if (fd < 0)
		return fd;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		free(r);
		close(fd);
		return pn_err(-ENOMEM, "out of memory");
	}
	r->fd = fd;
	r->max = max_bytes ? max_bytes : PN_RECORD_MAX_DEFAULT;
	r->inplace = pn_ofile_std(path) != 0;
	r->size = r->inplace || fstat(fd, &st) ? 0 : (uint64_t)st.st_size;
	ret = r->inplace ? 0 : close_cut_line(fd, path, &r->size);
	if (ret) {
		pn_record_close(r);
		return ret;
	}
	*rp = r;
	return 0;
}

/* FILE becomes FILE.1 (an older FILE.1 is replaced only if it is a regular
 * file), and FILE starts anew */
static int rotate(struct pn_record *r)
{
	size_t n = strlen(r->path) + 3;
	char *old = malloc(n);
	struct stat st;
	int fd, ret = 0;

	if (!old)
		return pn_err(-ENOMEM, "out of memory");
	snprintf(old, n, "%s.1", r->path);
	if (!lstat(old, &st) && !S_ISREG(st.st_mode)) {
		ret = pn_err(-EEXIST, "cannot rotate '%s': '%s' is not a regular file", r->path, old);
		goto out;
	}
	/* renaming the name we opened: a link put there since is not followed */
	if (rename(r->path, old)) {
		ret = pn_err(-errno, "cannot rotate '%s' to '%s': %s", r->path, old, strerror(errno));
		goto out;
	}
	fd = pn_ofile_append(r->path);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	close(r->fd);
	r->fd = fd;
	r->size = 0;
	r->rotations++;
out:
	free(old);
	return ret;
}

/*
 * FILE removed or moved since it was opened (logrotate's rename, an
 * admin's rm): samples would go on into a file no name reaches, and the
 * next rotation fail.  The name is taken up again: a new FILE, or the
 * regular file now there appended to (anything else refused).
 */
static int follow(struct pn_record *r)
{
	struct stat a, b;
	int fd;

	if (r->inplace || fstat(r->fd, &b) ||
	    (!lstat(r->path, &a) && a.st_dev == b.st_dev && a.st_ino == b.st_ino))
		return 0;
	fd = pn_ofile_append(r->path);
	if (fd < 0)
		return fd;
	close(r->fd);
	r->fd = fd;
	r->size = fstat(fd, &b) ? 0 : (uint64_t)b.st_size;
	return 0;
}

static int stop(struct pn_record *r, int ret)
{
	r->stopped = 1;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	return pn_err_ctx(ret, "--record");
}

int pn_record_write(struct pn_record *r, const struct pn_counters_set *v,
		    const struct pn_nodectx *ctx, const char *host, double interval,
		    const struct pn_record_gpu *gpus, int ngpus)
{
	size_t off = 0;
	int ret;

	if (!r || r->stopped)
		return 0;
	ret = pn_record_format(&r->buf, &r->cap, &r->len, v, ctx, host, interval, gpus, ngpus);
	if (ret)
		return stop(r, ret);
	/* the reader would skip it: not written, so that every line replays */
	if (r->len - 1 > PN_RECORD_LINE_MAX)
		return stop(r, pn_err(-EFBIG, "one sample of %d ports takes %zu bytes, more than "
				      "the %u MiB a line of a recording may take",
				      v->n, r->len, PN_RECORD_LINE_MAX >> 20));
	if (r->len > r->max)
		return stop(r, pn_err(-EFBIG, "one sample takes %zu bytes, more than --record-max",
				      r->len));
	ret = follow(r);
	if (ret)
		return stop(r, ret);
	if (r->size + r->len > r->max && !r->inplace) {
		ret = rotate(r);
		if (ret)
			return stop(r, ret);
	}
	while (off < r->len) {
		ssize_t w = write(r->fd, r->buf + off, r->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return stop(r, pn_err(w < 0 ? -errno : -EIO, "cannot write '%s': %s", r->path,
					      strerror(w < 0 ? errno : EIO)));
		off += (size_t)w;
	}
	r->size += r->len;
	r->total += r->len;
	/* a buffer grown by one huge sample is not kept */
	if (r->cap > (4u << 20) && r->len < r->cap / 4) {
		free(r->buf);
		r->buf = NULL;
		r->cap = 0;
	}
	return 0;
}

uint64_t pn_record_bytes(const struct pn_record *r)
{
	return r ? r->total : 0;
}

int pn_record_rotations(const struct pn_record *r)
{
	return r ? r->rotations : 0;
}

void pn_record_close(struct pn_record *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	free(r->path);
	free(r);
}

/* ---- parser ---- */

void pn_record_sample_init(struct pn_record_sample *s)
{
	memset(s, 0, sizeof(*s));
	pn_counters_set_init(&s->set, NULL);
	s->set.owner = 0;
}

void pn_record_sample_release(struct pn_record_sample *s)
{
	pn_counters_set_release(&s->set);
	pn_nodectx_release(&s->ctx);
	s->ctx.nics = NULL;
	s->ctx.nnics = 0;
}

static int bad(const char *what)
{
	return pn_err(-EINVAL, "%s", what);
}

static int get_int(const struct pn_jval *o, const char *key, int lo, int hi, int *out)
{
	long long v;

	if (pn_json_int(pn_json_get(o, key), &v) || v < lo || v > hi)
		return pn_err(-EINVAL, "'%s' is not an integer in [%d, %d]", key, lo, hi);
	*out = (int)v;
	return 0;
}

/* a number or null (NAN) */
static int get_dbl(const struct pn_jval *o, const char *key, double *out)
{
	const struct pn_jval *v = pn_json_get(o, key);

	if (v && v->type == PN_JSON_NULL) {
		*out = NAN;
		return 0;
	}
	if (pn_json_num(v, out))
		return pn_err(-EINVAL, "'%s' is not a number", key);
	return 0;
}

/*
 * A measured value or null (NAN) within [0, hi]: a recording is input
 * penny did not make, and a negative or 1e308 rate must not reach JSON,
 * Prometheus or a plot.
 */
#define REC_BPS_MAX 1e13	/* bytes or packets per second: 80 Tb/s */
#define REC_SECS_MAX 1e9	/* seconds between two samples */

static int get_meas(const struct pn_jval *o, const char *key, double hi, double *out)
{
	int ret = get_dbl(o, key, out);

	if (ret)
		return ret;
	if (!isnan(*out) && !(*out >= 0 && *out <= hi))
		return pn_err(-EINVAL, "'%s' is out of range (0 to %g)", key, hi);
	return 0;
}

/* an unsigned 64-bit count: a number up to 2^53 or a decimal string */
static int val_u64(const struct pn_jval *v, uint64_t *out)
{
	long long x;

	if (v && v->type == PN_JSON_STRING)
		return pn_counters_parse_value(v->u.s, out) ? -EINVAL : 0;
	if (pn_json_int(v, &x) || x < 0)
		return -EINVAL;
	*out = (uint64_t)x;
	return 0;
}

static int get_u64(const struct pn_jval *o, const char *key, uint64_t *out)
{
	if (val_u64(pn_json_get(o, key), out))
		return pn_err(-EINVAL, "'%s' is not a count", key);
	return 0;
}

static int get_str(const struct pn_jval *o, const char *key, char *buf, size_t len)
{
	const char *s = pn_json_str(pn_json_get(o, key));

	if (!s || strlen(s) >= len)
		return pn_err(-EINVAL, "'%s' is not a string of at most %zu bytes", key, len - 1);
	memcpy(buf, s, strlen(s) + 1);
	return 0;
}

static int parse_ctr(struct pn_counter *c, const struct pn_jval *a)
{
	unsigned f[6];
	long long x;
	int i;

	if (!a || a->type != PN_JSON_ARRAY || a->n != 10)
		return bad("a counter is not an array of 10");
	memset(c, 0, sizeof(*c));
	for (i = 0; i < 6; i++) {
		if (pn_json_int(pn_json_at(a, i == 0 ? 0 : (unsigned)i + 1), &x) || x < 0 ||
		    x > UINT32_MAX)
			return bad("a counter's field is not a small number");
		f[i] = (unsigned)x;
	}
	if (f[0] >= PN_CG_COUNT || f[1] >= PN_CK_COUNT || f[2] > 255 || f[3] > 255)
		return bad("a counter's group, kind, scale or width is out of range");
	if (!pn_json_str(pn_json_at(a, 1)) || strlen(pn_json_str(pn_json_at(a, 1))) >= sizeof(c->name))
		return bad("a counter's name is not a short string");
	snprintf(c->name, sizeof(c->name), "%s", pn_json_str(pn_json_at(a, 1)));
	c->group = (uint8_t)f[0];
	c->kind = (uint8_t)f[1];
	c->scale = (uint8_t)f[2];
	c->width = (uint8_t)f[3];
	c->flags = f[4];
	c->wraps = f[5];
	if (val_u64(pn_json_at(a, 7), &c->raw) || val_u64(pn_json_at(a, 8), &c->value) ||
	    val_u64(pn_json_at(a, 9), &c->delta))
		return bad("a counter's value is not a count");
	c->rate = NAN;
	return 0;
}

static int parse_port(struct pn_counters_port *p, const struct pn_jval *o)
{
	const struct pn_jval *ix = pn_json_get(o, "ix"), *ctr = pn_json_get(o, "ctr"), *v;
	long long x;
	int ret, i;

	memset(p, 0, offsetof(struct pn_counters_port, ctr));
	if (!o || o->type != PN_JSON_OBJECT)
		return bad("a port is not an object");
	if ((ret = get_str(o, "name", p->name, sizeof(p->name))) ||
	    (ret = get_str(o, "dev", p->dev, sizeof(p->dev))) ||
	    (ret = get_int(o, "port", 0, 1 << 30, &p->port)) ||
	    (ret = get_int(o, "type", 0, PN_PT_REMOTE, &p->type)) ||
	    (ret = get_int(o, "lid", -1, 1 << 30, &p->lid)) ||
	    (ret = get_int(o, "state", -1, 1 << 30, &p->state)) ||
	    (ret = get_str(o, "state_name", p->state_name, sizeof(p->state_name))) ||
	    (ret = get_str(o, "phys_state", p->phys_state, sizeof(p->phys_state))) ||
	    (ret = get_str(o, "rate", p->rate, sizeof(p->rate))) ||
	    (ret = get_meas(o, "rate_gbps", PN_RATE_MAX_GBPS, &p->rate_gbps)) ||
	    (ret = get_str(o, "link_layer", p->link_layer, sizeof(p->link_layer))) ||
	    (ret = get_str(o, "netdev", p->netdev, sizeof(p->netdev))) ||
	    (ret = get_int(o, "data_group", -1, PN_CG_COUNT - 1, &p->data_group)) ||
	    (ret = get_u64(o, "nsamples", &p->nsamples)) ||
	    (ret = get_u64(o, "t_ns", &p->t_ns)) ||
	    (ret = get_meas(o, "elapsed", REC_SECS_MAX, &p->elapsed)) ||
	    (ret = get_meas(o, "rx_Bps", REC_BPS_MAX, &p->rx_Bps)) ||
	    (ret = get_meas(o, "tx_Bps", REC_BPS_MAX, &p->tx_Bps)) ||
	    (ret = get_meas(o, "rx_pps", REC_BPS_MAX, &p->rx_pps)) ||
	    (ret = get_meas(o, "tx_pps", REC_BPS_MAX, &p->tx_pps)) ||
	    (ret = get_meas(o, "util", 1, &p->util)) ||
	    (ret = get_u64(o, "err_total", &p->err_total)) ||
	    (ret = get_u64(o, "disc_total", &p->disc_total)) ||
	    (ret = get_int(o, "unreadable", 0, PN_COUNTERS_MAX, &p->nunreadable)))
		return ret;
	if (!isfinite(p->rate_gbps))
		p->rate_gbps = 0;
	if (!isfinite(p->elapsed))
		p->elapsed = 0;
	v = pn_json_get(o, "err");
	p->err_valid = v && v->type != PN_JSON_NULL;
	if (p->err_valid && val_u64(v, &p->err_delta))
		return bad("'err' is not a count");
	v = pn_json_get(o, "disc");
	p->disc_valid = v && v->type != PN_JSON_NULL;
	if (p->disc_valid && val_u64(v, &p->disc_delta))
		return bad("'disc' is not a count");
	if (pn_json_int(pn_json_get(o, "flags"), &x) || x < 0 || x > UINT32_MAX)
		return bad("'flags' is not a small number");
	p->flags = (uint32_t)x;
	if (!ctr || ctr->type != PN_JSON_ARRAY || ctr->n > PN_COUNTERS_MAX)
		return bad("'ctr' is not an array of counters");
	p->nctr = (int)ctr->n;
	for (i = 0; i < p->nctr; i++) {
		int j;

		ret = parse_ctr(&p->ctr[i], pn_json_at(ctr, (unsigned)i));
		if (ret)
			return ret;
		for (j = 0; j < i; j++) /* one series a counter in Prometheus */
			if (p->ctr[j].group == p->ctr[i].group && !strcmp(p->ctr[j].name, p->ctr[i].name))
				return bad("a counter appears twice in a port");
		if ((p->ctr[i].flags & PN_CF_DELTA) && p->elapsed > 0)
			p->ctr[i].rate = (double)p->ctr[i].delta / p->elapsed;
	}
	if (!ix || ix->type != PN_JSON_ARRAY || ix->n != PN_CK_COUNT)
		return bad("'ix' is not an array of counter indices");
	for (i = 0; i < PN_CK_COUNT; i++) {
		if (pn_json_int(pn_json_at(ix, (unsigned)i), &x) || x < -1 || x >= p->nctr)
			return bad("'ix' names a counter the port does not have");
		p->ix[i] = (int)x;
	}
	return 0;
}

static int parse_nics(struct pn_nodectx *c, const struct pn_jval *a)
{
	unsigned i, k;
	int ret;

	if (!a || a->type != PN_JSON_ARRAY || a->n > 4096)
		return bad("'nics' is not an array");
	if (a->n) {
		c->nics = calloc(a->n, sizeof(*c->nics));
		if (!c->nics)
			return pn_err(-ENOMEM, "out of memory");
	}
	c->nnics = (int)a->n;
	for (i = 0; i < a->n; i++) {
		const struct pn_jval *o = pn_json_at(a, i), *g = pn_json_get(o, "gpus");
		struct pn_nicctx *n = &c->nics[i];

		if ((ret = get_str(o, "dev", n->dev, sizeof(n->dev))) ||
		    (ret = get_int(o, "numa", -1, 1 << 20, &n->numa)) ||
		    (ret = get_int(o, "rail", 0, 1 << 20, &n->rail)))
			return ret;
		if (!g || g->type != PN_JSON_ARRAY || g->n > PN_NODECTX_GPUS)
			return bad("a NIC's 'gpus' is not an array of GPU indices");
		n->ngpus = (int)g->n;
		for (k = 0; k < g->n; k++) {
			long long x;

			if (pn_json_int(pn_json_at(g, k), &x) || x < 0 || x > (1 << 20))
				return bad("a NIC's GPU is not an index");
			n->gpu[k] = (int)x;
		}
	}
	return 0;
}

static int parse_gpus(struct pn_record_sample *s, const struct pn_jval *a)
{
	unsigned i;
	int ret;

	s->ngpus = 0;
	if (!a)
		return 0;
	if (a->type != PN_JSON_ARRAY || a->n > PN_RECORD_GPUS_MAX)
		return bad("'gpus' is not an array of GPU rows");
	for (i = 0; i < a->n; i++) {
		const struct pn_jval *o = pn_json_at(a, i);
		struct pn_record_gpu *g = &s->gpus[i];

		if ((ret = get_int(o, "index", 0, 1 << 20, &g->index)) ||
		    (ret = get_str(o, "name", g->name, sizeof(g->name))) ||
		    (ret = get_meas(o, "nvlink_tx_Bps", REC_BPS_MAX, &g->nvlink_tx_Bps)) ||
		    (ret = get_meas(o, "nvlink_rx_Bps", REC_BPS_MAX, &g->nvlink_rx_Bps)) ||
		    (ret = get_meas(o, "pcie_tx_Bps", REC_BPS_MAX, &g->pcie_tx_Bps)) ||
		    (ret = get_meas(o, "pcie_rx_Bps", REC_BPS_MAX, &g->pcie_rx_Bps)))
			return ret;
	}
	s->ngpus = (int)a->n;
	return 0;
}

static int parse_doc(struct pn_record_sample *s, const struct pn_jval *root)
{
	const struct pn_jval *ports = pn_json_get(root, "ports");
	struct pn_counters_set *v = &s->set;
	int ver, ret;
	unsigned i;

	if (!root || root->type != PN_JSON_OBJECT)
		return bad("not a JSON object");
	if (get_int(root, "penny_record", 1, 1 << 20, &ver))
		return bad("not a penny top recording (no 'penny_record')");
	if (ver != PN_RECORD_VERSION)
		return pn_err(-EINVAL, "recording format %d, this penny reads %d", ver,
			      PN_RECORD_VERSION);
	if ((ret = get_str(root, "host", s->host, sizeof(s->host))) ||
	    (ret = get_u64(root, "seq", &v->seq)) ||
	    (ret = get_u64(root, "mono_ns", &s->mono_ns)) ||
	    (ret = get_dbl(root, "wall", &v->wall)) ||
	    (ret = get_dbl(root, "interval", &s->interval)) ||
	    (ret = get_dbl(root, "elapsed", &v->elapsed)) ||
	    (ret = get_int(root, "ngpus", 0, 1 << 20, &s->ctx.ngpus)) ||
	    (ret = get_str(root, "note", s->ctx.note, sizeof(s->ctx.note))))
		return ret;
	if (!isfinite(v->wall) || !(s->interval > 0 && s->interval <= REC_SECS_MAX) ||
	    !(v->elapsed >= 0 && v->elapsed <= REC_SECS_MAX))
		return bad("'wall', 'interval' or 'elapsed' is not a time");
	v->t_ns = s->mono_ns;
	v->interval = s->interval;
	ret = parse_nics(&s->ctx, pn_json_get(root, "nics"));
	if (ret)
		return ret;
	if (!ports || ports->type != PN_JSON_ARRAY || ports->n > 65536)
		return bad("'ports' is not an array");
	if ((int)ports->n > v->cap) {
		struct pn_counters_port *np = realloc(v->ports, ports->n * sizeof(*np));

		if (!np)
			return pn_err(-ENOMEM, "out of memory");
		v->ports = np;
		v->cap = (int)ports->n;
	}
	for (i = 0; i < ports->n; i++) {
		ret = parse_port(&v->ports[i], pn_json_at(ports, i));
		if (ret)
			return pn_err_ctx(ret, "port %u", i + 1);
		v->n = (int)i + 1;
	}
	return parse_gpus(s, pn_json_get(root, "gpus"));
}

int pn_record_parse(struct pn_record_sample *s, const char *line, size_t len)
{
	struct pn_json_doc doc;
	int ret;

	pn_record_sample_release(s);
	pn_record_sample_init(s);
	if (len > PN_RECORD_LINE_MAX)
		return pn_err(-EINVAL, "a line longer than %u bytes", PN_RECORD_LINE_MAX);
	if (!len) /* (no buffer at all for a first line that is empty) */
		return pn_err(-EINVAL, "an empty line");
	ret = pn_json_parse(&doc, line, len);
	if (ret) {
		/* the caller names the recording's line: keep the column alone */
		char m[256];

		snprintf(m, sizeof(m), "%s", pn_errmsg(ret));
		return strncmp(m, "line 1 column ", 14) ? ret : pn_err(ret, "%s", m + 7);
	}
	ret = parse_doc(s, doc.root);
	pn_json_release(&doc);
	if (ret) {
		pn_record_sample_release(s);
		pn_record_sample_init(s);
	}
	return ret;
}
