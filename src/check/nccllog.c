/* SPDX-License-Identifier: MIT */
/*
 * NCCL's NCCL_DEBUG=INFO log into the table of the paths it chose
 * (check/nccllog.h).  Formats, not code, follow NCCL: a line is
 * "<host>:<pid>:<tid> [<dev>] NCCL INFO <message>"; only the message
 * matters, and the host names the NIC list a NET path's index refers to.
 */
#define _GNU_SOURCE
#include "check/nccllog.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char INFO[] = "NCCL INFO ";

const char *pn_nccl_transport_name(enum pn_nccl_transport t)
{
	switch (t) {
	case PN_NT_P2P: return "P2P";
	case PN_NT_SHM: return "SHM";
	case PN_NT_NET: return "NET";
	default: return "other";
	}
}

/*
 * The message of line[0, n) after "NCCL INFO " into msg (NUL-terminated),
 * the host before the first ':' of the prefix into host; -1 when the line
 * is no NCCL INFO line or is too long.
 */
static int message(const char *line, size_t n, char *msg, size_t mlen, char *host, size_t hlen)
{
	const char *m = memmem(line, n, INFO, sizeof(INFO) - 1);
	const char *colon;
	size_t k;

	if (!m)
		return -1;
	k = n - (size_t)(m + sizeof(INFO) - 1 - line);
	if (k >= mlen)
		return -1;
	memcpy(msg, m + sizeof(INFO) - 1, k);
	msg[k] = 0;
	while (k && (msg[k - 1] == '\r' || msg[k - 1] == ' ' || msg[k - 1] == '\n'))
		msg[--k] = 0;
	host[0] = 0;
	colon = memchr(line, ':', (size_t)(m - line));
	if (colon && colon > line) {
		size_t hl = (size_t)(colon - line);
		const char *sp = memchr(line, ' ', hl);

		if (!sp && hl < hlen) {
			memcpy(host, line, hl);
			host[hl] = 0;
		}
	}
	return 0;
}

/* Digits at *s into *v (bounded); advances *s.  -1 without a digit. */
static int number(const char **s, int *v)
{
	long x = 0;
	const char *p = *s;

	if (!isdigit((unsigned char)*p))
		return -1;
	while (isdigit((unsigned char)*p)) {
		if (x > 100000000L)
			return -1;
		x = x * 10 + (*p++ - '0');
	}
	*v = (int)x;
	*s = p;
	return 0;
}

static int skip_lit(const char **s, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(*s, lit, n))
		return -1;
	*s += n;
	return 0;
}

/* "3[3]" or "2[c7000]": the rank and what the brackets hold. */
static int rank_dev(const char **s, int *rank, char *dev, size_t dlen)
{
	const char *p = *s, *close;

	if (number(&p, rank) || *p != '[')
		return -1;
	close = strchr(p, ']');
	if (!close || (size_t)(close - p - 1) >= dlen || close == p + 1)
		return -1;
	memcpy(dev, p + 1, (size_t)(close - p - 1));
	dev[close - p - 1] = 0;
	*s = close + 1;
	return 0;
}

static void parse_via(struct pn_nccl_path *p)
{
	const char *v = p->via, *q;

	p->nic = -1;
	if (!strncmp(v, "P2P/", 4)) {
		p->transport = PN_NT_P2P;
		p->read = strstr(v, "/read") != NULL;
	} else if (!strncmp(v, "SHM/", 4) || !strcmp(v, "SHM")) {
		p->transport = PN_NT_SHM;
	} else if (!strncmp(v, "NET/", 4)) {
		size_t k;

		p->transport = PN_NT_NET;
		v += 4;
		k = strcspn(v, "/");
		snprintf(p->net, sizeof(p->net), "%.*s", (int)(k < sizeof(p->net) ? k : 0), v);
		q = v + k;
		if (*q == '/') {
			q++;
			if (number(&q, &p->nic))
				p->nic = -1;
		}
		p->gdr = strstr(q, "/GDRDMA") != NULL;
	} else {
		p->transport = PN_NT_OTHER;
	}
}

int pn_nccl_parse_path(const char *line, size_t n, struct pn_nccl_path *p)
{
	char msg[PN_NCCL_LINE_MAX];
	const char *s;

	memset(p, 0, sizeof(*p));
	if (message(line, n, msg, sizeof(msg), p->host, sizeof(p->host)))
		return 0;
	s = msg;
	if (skip_lit(&s, "Channel ") || number(&s, &p->channel))
		return 0;
	if (*s == '/') {
		s++;
		if (number(&s, &p->conn))
			return 0;
	}
	if (skip_lit(&s, " : ") || rank_dev(&s, &p->from, p->from_dev, sizeof(p->from_dev)) ||
	    skip_lit(&s, " -> ") || rank_dev(&s, &p->to, p->to_dev, sizeof(p->to_dev)))
		return 0;
	if (!skip_lit(&s, " [send]"))
		snprintf(p->dir, sizeof(p->dir), "send");
	else if (!skip_lit(&s, " [receive]"))
		snprintf(p->dir, sizeof(p->dir), "receive");
	if (skip_lit(&s, " via ") || !*s || strlen(s) >= sizeof(p->via))
		return 0;
	snprintf(p->via, sizeof(p->via), "%s", s);
	parse_via(p);
	return 1;
}

int pn_nccl_parse_using(const char *line, size_t n, struct pn_nccl_nic *nics, int max)
{
	char msg[PN_NCCL_LINE_MAX], host[64], net[24], *tok, *save = NULL;
	const char *s, *u;
	int count = 0;
	size_t k;

	if (message(line, n, msg, sizeof(msg), host, sizeof(host)))
		return 0;
	if (strncmp(msg, "NET/", 4))
		return 0;
	s = msg + 4;
	u = strstr(s, " : Using ");
	k = u ? (size_t)(u - s) : 0;
	if (!u || !k || k >= sizeof(net) || memchr(s, ' ', k))
		return 0;
	memcpy(net, s, k);
	net[k] = 0;
	for (tok = strtok_r((char *)u + strlen(" : Using "), " ", &save); tok && count < max;
	     tok = strtok_r(NULL, " ", &save)) {
		struct pn_nccl_nic *x = &nics[count];
		const char *t = tok;
		char *slash;
		int idx;

		/* "[RO]", "; OOB eth0:..." end the list */
		if (*t != '[' || (t++, number(&t, &idx)) || *t != ']' || !t[1])
			break;
		t++;
		memset(x, 0, sizeof(*x));
		snprintf(x->host, sizeof(x->host), "%s", host);
		snprintf(x->net, sizeof(x->net), "%s", net);
		x->index = idx;
		snprintf(x->name, sizeof(x->name), "%s", t);
		slash = strchr(x->name, '/');
		if (slash) {
			*slash = 0;
			snprintf(x->link, sizeof(x->link), "%.*s", (int)strcspn(slash + 1, "/;"),
				 slash + 1);
		}
		/* Socket: "eth0:10.0.0.1<0>" is the interface eth0 */
		if (!strcmp(net, "Socket"))
			x->name[strcspn(x->name, ":")] = 0;
		x->name[strcspn(x->name, ";")] = 0;
		count++;
	}
	return count;
}

static int version(const char *line, size_t n, char *ver, size_t vlen)
{
	char msg[256], host[64];
	const char *v;

	/* with the INFO prefix, or (older NCCL) a line of its own */
	if (message(line, n, msg, sizeof(msg), host, sizeof(host))) {
		if (n >= sizeof(msg))
			return 0;
		memcpy(msg, line, n);
		msg[n] = 0;
	}
	if (strncmp(msg, "NCCL version ", 13))
		return 0;
	v = msg + 13;
	if (!isdigit((unsigned char)*v))
		return 0;
	snprintf(ver, vlen, "%.*s", (int)strcspn(v, " "), v);
	return 1;
}

static int add_path(struct pn_nccl_log *l, const struct pn_nccl_path *p, int *cap)
{
	if (l->npaths >= PN_NCCL_MAX_PATHS) {
		l->dropped++;
		return 0;
	}
	if (l->npaths == *cap) {
		int nc = *cap ? *cap * 2 : 64;
		struct pn_nccl_path *np = realloc(l->paths, (size_t)nc * sizeof(*np));

		if (!np)
			return -ENOMEM;
		l->paths = np;
		*cap = nc;
	}
	l->paths[l->npaths++] = *p;
	return 0;
}

/* A NIC seen again (every rank prints its Using line) replaces nothing. */
static int add_nics(struct pn_nccl_log *l, const struct pn_nccl_nic *nics, int n)
{
	int i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < l->nnics; j++)
			if (l->nics[j].index == nics[i].index && !strcmp(l->nics[j].host, nics[i].host) &&
			    !strcmp(l->nics[j].net, nics[i].net))
				break;
		if (j < l->nnics)
			continue;
		if (l->nnics >= PN_NCCL_MAX_NICS) {
			l->dropped++;
			continue;
		}
		if (!l->nics) {
			l->nics = calloc(PN_NCCL_MAX_NICS, sizeof(*l->nics));
			if (!l->nics)
				return -ENOMEM;
		}
		l->nics[l->nnics++] = nics[i];
	}
	return 0;
}

/* The NIC name of every NET path, from its host's Using line of its plugin. */
static void name_nics(struct pn_nccl_log *l)
{
	int i, j;

	for (i = 0; i < l->npaths; i++) {
		struct pn_nccl_path *p = &l->paths[i];

		if (p->transport != PN_NT_NET || p->nic < 0)
			continue;
		for (j = 0; j < l->nnics; j++) {
			const struct pn_nccl_nic *x = &l->nics[j];

			if (x->index == p->nic && !strcmp(x->host, p->host) && !strcmp(x->net, p->net)) {
				snprintf(p->nic_name, sizeof(p->nic_name), "%s", x->name);
				break;
			}
		}
	}
}

int pn_nccl_log_parse(struct pn_nccl_log *l, const char *buf, size_t len)
{
	struct pn_nccl_nic nics[32];
	struct pn_nccl_path p;
	size_t i = 0;
	int cap = 0, n, ret;

	while (i < len) {
		const char *line = buf + i, *nl = memchr(line, '\n', len - i);
		size_t k = nl ? (size_t)(nl - line) : len - i;

		i += k + 1;
		l->lines++;
		if (k >= PN_NCCL_LINE_MAX) {
			if (memmem(line, k, INFO, sizeof(INFO) - 1))
				l->dropped++;
			continue;
		}
		if (pn_nccl_parse_path(line, k, &p)) {
			ret = add_path(l, &p, &cap);
			if (ret)
				return ret;
			continue;
		}
		n = pn_nccl_parse_using(line, k, nics, (int)(sizeof(nics) / sizeof(nics[0])));
		if (n > 0) {
			ret = add_nics(l, nics, n);
			if (ret)
				return ret;
			continue;
		}
		if (!l->version[0])
			version(line, k, l->version, sizeof(l->version));
	}
	name_nics(l);
	return 0;
}

void pn_nccl_log_release(struct pn_nccl_log *l)
{
	free(l->paths);
	free(l->nics);
	memset(l, 0, sizeof(*l));
}
