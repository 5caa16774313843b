/* SPDX-License-Identifier: MIT */
/*
 * Where the ranks of a launcher's job meet when nobody said (no --root, no
 * PENNY_ROOT): rank 0's host from the launcher's own variables (Slurm's step
 * node list in its hostlist syntax, Open MPI's mpirun address, torchrun's
 * MASTER_ADDR) and ports derived from the job's public context, which rank 0
 * takes in order until one is free and the others try in the same order.
 * Pure functions over the environment snapshot, but for the bind that
 * tells rank 0 it is where the others will look.
 */
#define _GNU_SOURCE
#include "engine/boot.h"
#include "engine/launch.h"
#include "base/file.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/sock.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Slurm's hostlist: "a1,b[01-04,07]c,d[1-2]x[3-4]" ---- */

/* One bracket group "[r,r-r,...]" at s: its length in hosts, or -EINVAL. */
static long group_count(const char *s, const char **end)
{
	long n = 0;

	s++;
	for (;;) {
		char *e;
		unsigned long lo, hi;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		lo = strtoul(s, &e, 10);
		hi = lo;
		if (*e == '-') {
			if (e[1] < '0' || e[1] > '9')
				return -EINVAL;
			hi = strtoul(e + 1, &e, 10);
		}
		if (hi < lo || hi > 999999999ul || n > LONG_MAX / 2 - (long)(hi - lo + 1))
			return -EINVAL;
		n += (long)(hi - lo + 1);
		s = e;
		if (*s == ']') {
			*end = s + 1;
			return n;
		}
		if (*s != ',')
			return -EINVAL;
		s++;
	}
}

/* The k-th number of the group at s, with the width of its range's low bound. */
static int group_nth(const char *s, long k, char *out, size_t len)
{
	s++;
	for (;;) {
		char *e;
		unsigned long lo = strtoul(s, &e, 10), hi = lo;
		int width = (int)(e - s);

		if (*e == '-')
			hi = strtoul(e + 1, &e, 10);
		if (k <= (long)(hi - lo)) {
			int n = snprintf(out, len, "%0*lu", width, lo + (unsigned long)k);

			return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
		}
		k -= (long)(hi - lo + 1);
		s = e + 1;
	}
}

/* Hosts in one item (text and groups up to a ',' outside brackets), or -EINVAL. */
static long item_count(const char *s, const char **end)
{
	long n = 1;

	if (!*s || *s == ',')
		return -EINVAL;
	while (*s && *s != ',') {
		if (*s == '[') {
			long g = group_count(s, &s);

			if (g <= 0 || n > LONG_MAX / g)
				return -EINVAL;
			n *= g;
		} else if (*s == ']' || *s == ' ' || *s == '\t' || *s == '\n') {
			return -EINVAL;
		} else {
			s++;
		}
	}
	*end = s;
	return n;
}

long pn_hostlist_count(const char *list)
{
	const char *s = list, *e;
	long n = 0, k;

	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		k = item_count(s, &e);
		if (k < 0 || n > LONG_MAX - k)
			return -EINVAL;
		n += k;
		if (!*e)
			return n;
		s = e + 1;
	}
}

/* Host k of the item at s (k below its count): the first group varies slowest. */
static int item_nth(const char *s, const char *end, long k, long count, char *out, size_t len)
{
	size_t o = 0;

	while (s < end) {
		if (*s == '[') {
			const char *ge;
			long g = group_count(s, &ge);
			int n;

			count /= g;
			n = group_nth(s, k / count, out + o, len - o);
			if (n < 0)
				return n;
			o += (size_t)n;
			k %= count;
			s = ge;
		} else {
			if (o + 1 >= len)
				return -ENAMETOOLONG;
			out[o++] = *s++;
		}
	}
	out[o] = 0;
	return 0;
}

int pn_hostlist_nth(const char *list, long k, char *out, size_t len)
{
	const char *s = list, *e;
	long n;

	if (pn_hostlist_count(list) < 0)
		return -EINVAL;
	if (k < 0)
		return 1;
	for (;;) {
		n = item_count(s, &e);
		if (k < n)
			return item_nth(s, e, k, n, out, len);
		k -= n;
		if (!*e)
			return 1;
		s = e + 1;
	}
}

/* ---- ports ---- */

int pn_rdv_ports(const char *ctx, int *ports, int max)
{
	static const char label[] = "penny port";
	int n = 0, i, j;

	for (i = 0; n < max && i < 4 * max; i++) {
		struct pn_sha256 s;
		uint8_t h[PN_SHA256_LEN], c[4];
		uint32_t v;
		int p;

		pn_put_u32(c, (uint32_t)i);
		pn_sha256_init(&s);
		pn_sha256_update(&s, label, sizeof(label));
		pn_sha256_update(&s, ctx, strlen(ctx) + 1);
		pn_sha256_update(&s, c, sizeof(c));
		pn_sha256_final(&s, h);
		pn_get_u32(h, &v);
		p = PN_RDV_PORT_LO + (int)(v % PN_RDV_PORT_SPAN);
		for (j = 0; j < n && ports[j] != p; j++)
			;
		if (j == n)
			ports[n++] = p;
	}
	return n;
}

/* Ports of a list like "12001-12005,12010" (Slurm's SLURM_STEP_RESV_PORTS). */
static int port_list(const char *s, int *ports, int max)
{
	char list[300], p[16];
	int n = 0, v;

	if (strlen(s) > sizeof(list) - 3)
		return 0;
	snprintf(list, sizeof(list), "[%s]", s);
	while (n < max && !pn_hostlist_nth(list, n, p, sizeof(p)) && !pn_parse_int(p, &v) &&
	       v > 0 && v < 65536)
		ports[n++] = v;
	return n;
}

static void rdv_add_ports(struct pn_rdv *r, const char *ctx)
{
	int derived[PN_RDV_MAX_PORTS], n, i, j;

	n = pn_rdv_ports(ctx, derived, PN_RDV_DERIVED);
	for (i = 0; i < n && r->nports < PN_RDV_MAX_PORTS; i++) {
		for (j = 0; j < r->nports && r->ports[j] != derived[i]; j++)
			;
		if (j == r->nports)
			r->ports[r->nports++] = derived[i];
	}
}

static void rdv_add_host(struct pn_rdv *r, const char *h, size_t len)
{
	if (r->nhosts < PN_RDV_MAX_HOSTS && len && len < sizeof(r->hosts[0])) {
		memcpy(r->hosts[r->nhosts], h, len);
		r->hosts[r->nhosts++][len] = 0;
	}
}

/* ---- single-host launchers: the rendezvous file ---- */

/*
 * Launchers that give no rendezvous address but say the job is on one host:
 * rank 0 listens on loopback and publishes "HOST:PORT COOKIE" in a file
 * named after the job id, in a directory only this user can write.  The
 * candidates, in order: ${TMPDIR}/penny-<euid> when TMPDIR is set; /run/penny
 * for root; ${XDG_RUNTIME_DIR}/penny; /tmp/penny-<euid>; and last one in the
 * user's home that no other user can make first,
 * ${XDG_CACHE_HOME:-$HOME/.cache}/penny/rdv-<host>.  Another user could plant
 * a directory or file in a shared one first (or a symbolic link): a
 * directory must be a real directory of ours with mode 0700, the file a
 * regular file of ours with mode 0600 (opened without following links), or
 * it is passed by.  Rank 0 publishes in the first candidate that is (or
 * becomes) ours; the others look in every candidate that is ours, so that
 * a planted directory taken away between the two does not part them.
 */
#define RDV_DIRS 5

struct rdv_dirs {
	char dir[RDV_DIRS][300];
	int n;
	int home;	/* the one in the home directory, or -1 */
	size_t below;	/* the length of its home part: the directories below it are made */
};

static void rdv_add_dir(struct rdv_dirs *d, const char *a, const char *b, const char *c)
{
	if (d->n < RDV_DIRS && (size_t)snprintf(d->dir[d->n], sizeof(d->dir[0]), "%s%s%s", a, b,
						 c) < sizeof(d->dir[0]))
		d->n++;
}

static void rdv_dirs(const struct pn_boot_cfg *cfg, struct rdv_dirs *d)
{
	const char *tmp = pn_boot_env(cfg->knobs.env, "TMPDIR");
	const char *run = pn_boot_env(cfg->knobs.env, "XDG_RUNTIME_DIR");
	const char *cache = pn_boot_env(cfg->knobs.env, "XDG_CACHE_HOME");
	const char *home = pn_boot_env(cfg->knobs.env, "HOME");
	char me[32], host[80];
	size_t i;
	int before;

	snprintf(me, sizeof(me), "%u", (unsigned)geteuid());
	snprintf(host, sizeof(host), "%s", pn_hostname());
	for (i = 0; host[i]; i++)
		if (!isalnum((unsigned char)host[i]) && !strchr("._-", host[i]))
			host[i] = '_';
	d->n = 0;
	d->home = -1;
	if (tmp && *tmp)
		rdv_add_dir(d, tmp, "/penny-", me);
	if (!geteuid())
		rdv_add_dir(d, "/run/penny", "", "");
	if (run && run[0] == '/')
		rdv_add_dir(d, run, "/penny", "");
	rdv_add_dir(d, "/tmp/penny-", me, "");
	before = d->n;
	if (cache && cache[0] == '/') {
		d->below = strlen(cache);
		rdv_add_dir(d, cache, "/penny/rdv-", host);
	} else if (home && home[0] == '/') {
		d->below = strlen(home);
		rdv_add_dir(d, home, "/.cache/penny/rdv-", host);
	}
	if (d->n > before)
		d->home = before;
}

/* mkdir that keeps an existing directory, and its parents below p[from] */
static int rdv_mkdir(const char *dir, size_t from)
{
	char p[300], *s;

	snprintf(p, sizeof(p), "%s", dir);
	for (s = from ? strchr(p + from + 1, '/') : NULL; s; s = strchr(s + 1, '/')) {
		*s = 0;
		if (mkdir(p, 0700) && errno != EEXIST)
			break;
		*s = '/';
	}
	if (mkdir(dir, 0700) && errno != EEXIST)
		return pn_err(-errno, "cannot create '%s': %s", dir, strerror(errno));
	return 0;
}

/* A candidate that is ours: its descriptor, else -errno with why. */
static int rdv_own(const char *dir)
{
	return pn_file_own_dir(dir, 077, "the rendezvous", "with mode 700");
}

/* Rank 0: the first candidate that is (or becomes) ours, else why none is. */
static int rdv_dir(const struct pn_boot_cfg *cfg, char *dir, size_t len)
{
	struct rdv_dirs d;
	char why[600] = "";
	size_t n = 0;
	int fd = -ENOENT, i;

	rdv_dirs(cfg, &d);
	for (i = 0; i < d.n; i++) {
		fd = rdv_mkdir(d.dir[i], i == d.home ? d.below : 0);
		if (!fd)
			fd = rdv_own(d.dir[i]);
		if (fd >= 0) {
			snprintf(dir, len, "%s", d.dir[i]);
			return fd;
		}
		PN_DBG(PN_LOG_BOOT, "rendezvous directory: %s", pn_errmsg(fd));
		if (n < sizeof(why))
			n += (size_t)snprintf(why + n, sizeof(why) - n, "%s%s", n ? "; " : "",
					      pn_errmsg(fd));
		pn_err_clear();
	}
	return pn_err(fd, "no private directory for the rendezvous file: %s (set TMPDIR to a "
		      "directory of yours, or give every rank --root HOST:PORT)", why);
}

/* The file's name: the job id, with what could leave the directory replaced. */
static void rdv_name(char *name, size_t len, const char *jobid)
{
	size_t i;

	snprintf(name, len, "%s.root", jobid);
	for (i = 0; name[i]; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			name[i] = '_';
}

static int rdv_publish(struct pn_boot_cfg *cfg, int dfd, const char *dir, const char *name,
		       char *published, size_t plen)
{
	static char root[64];
	int port = 0;
	char tmp[300], line[160];
	int fd = pn_sock_listen("127.0.0.1", 0, 4096, &port), n, i, ret = 0;

	if (fd < 0 || pn_boot_random(cfg->secret, sizeof(cfg->secret))) {
		if (fd >= 0)
			close(fd);
		return pn_err(-EIO, "cannot listen on 127.0.0.1 for the rendezvous");
	}
	cfg->listen_fd = fd;
	cfg->have_secret = 1;
	snprintf(root, sizeof(root), "127.0.0.1:%d", port);
	n = snprintf(line, sizeof(line), "%s ", root);
	for (i = 0; i < 32; i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%02x", cfg->secret[i]);
	n += snprintf(line + n, sizeof(line) - (size_t)n, "\n");
	snprintf(tmp, sizeof(tmp), "%s.%d", name, (int)getpid());
	unlinkat(dfd, tmp, 0); /* ours, from a process with our pid */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, line, (size_t)n) != n || close(fd) ||
	    renameat(dfd, tmp, dfd, name)) {
		ret = pn_err(-errno, "cannot write '%s/%s': %s", dir, name, strerror(errno));
		if (fd >= 0)
			unlinkat(dfd, tmp, 0);
		return ret;
	}
	snprintf(published, plen, "%s/%s", dir, name);
	snprintf(cfg->secret_src, sizeof(cfg->secret_src), "rank 0's, in %.80s", published);
	cfg->root = root;
	return 0;
}

/* 1: not there yet; 0: read; <0: refused or unreadable */
static int rdv_read(struct pn_boot_cfg *cfg, int dfd, const char *dir, const char *name)
{
	static char root[64];
	char line[160], hex[72];
	struct stat st;
	ssize_t n;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0)
		return pn_err(errno == ELOOP ? -EPERM : -errno, "refusing '%s/%s' for the rendezvous: %s",
			      dir, name, errno == ELOOP ? "a symbolic link" : strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return pn_err(-EPERM, "refusing '%s/%s' for the rendezvous: not a regular file of uid "
			      "%u with mode 600", dir, name, (unsigned)geteuid());
	}
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	line[n] = 0;
	if (sscanf(line, "%63s %71s", root, hex) != 2 || strlen(hex) != 64)
		return 1; /* rename makes it whole; a partial one is not ours */
	if (pn_boot_hex(hex, cfg->secret, sizeof(cfg->secret)))
		return pn_err(-EPROTO, "'%s/%s' holds no job secret", dir, name);
	cfg->have_secret = 1;
	snprintf(cfg->secret_src, sizeof(cfg->secret_src), "rank 0's, in %.60s/%.40s", dir, name);
	cfg->root = root;
	return 0;
}

/* The other ranks: look in every candidate that is ours until rank 0 published. */
static int rdv_find(struct pn_boot_cfg *cfg, double deadline, const char *name)
{
	struct rdv_dirs d;
	char where[400] = "";
	size_t n = 0;
	int ret = 1, i, fd;

	rdv_dirs(cfg, &d);
	for (i = 0; i < d.n && n < sizeof(where); i++)
		n += (size_t)snprintf(where + n, sizeof(where) - n, "%s%s", i ? ", " : "", d.dir[i]);
	for (;;) {
		for (i = 0; i < d.n && ret > 0; i++) {
			if ((fd = rdv_own(d.dir[i])) < 0) {
				pn_err_clear();
				continue;
			}
			ret = rdv_read(cfg, fd, d.dir[i], name);
			close(fd);
		}
		if (ret <= 0)
			return ret;
		if (pn_now() > deadline)
			return pn_err(-ETIMEDOUT, "timed out after %g s waiting for rank 0 to publish "
				      "'%s' in a directory of this user (%s)", cfg->timeout, name, where);
		usleep(10000);
	}
}

int pn_rdv_file(struct pn_boot_cfg *cfg, double deadline, char *published, size_t len)
{
	char dir[300], name[80];
	int dfd, ret;

	rdv_name(name, sizeof(name), cfg->jobid);
	if (cfg->rank != 0)
		return rdv_find(cfg, deadline, name);
	dfd = rdv_dir(cfg, dir, sizeof(dir));
	if (dfd < 0)
		return dfd;
	ret = rdv_publish(cfg, dfd, dir, name, published, len);
	close(dfd);
	return ret;
}

/* ---- the launchers ---- */

/* SLURM_NODE_ALIASES "name:addr:host,...": the address of node, else the node. */
static void slurm_addr(struct pn_rdv *r, const char *const *env, const char *node)
{
	const char *a = pn_boot_env(env, "SLURM_NODE_ALIASES"), *p, *e;
	size_t nl = strlen(node);

	for (p = a; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (strncmp(p, node, nl) || p[nl] != ':')
			continue;
		p += nl + 1;
		if (*p == '[') {
			e = strchr(p, ']');
			if (e)
				rdv_add_host(r, p + 1, (size_t)(e - p - 1));
		} else {
			e = p + strcspn(p, ":,");
			rdv_add_host(r, p, (size_t)(e - p));
		}
		break;
	}
	if (!r->nhosts)
		rdv_add_host(r, node, nl);
}

/* Rank 0's node under srun: 0, or -EINVAL with what is missing. */
static int slurm_root(struct pn_boot_cfg *cfg, char *node, size_t len, const char **from)
{
	const char *const *env = cfg->knobs.env;
	const char *d = pn_boot_env(env, "SLURM_DISTRIBUTION"), *list = NULL, *s;
	static const char *const lists[] = { "SLURM_JOB_NODELIST_HET_GROUP_0",
		"SLURM_JOB_NODELIST_PACK_GROUP_0", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
		"SLURM_NODELIST" };
	size_t i;

	if (d && !strncmp(d, "arbitrary", 9) && (s = pn_boot_env(env, "SLURM_HOSTFILE"))) {
		/* -m arbitrary: rank 0 is on the hostfile's first line */
		char buf[300];
		int fd = open(s, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

		if (fd >= 0)
			close(fd);
		if (n > 0) {
			buf[n] = 0;
			buf[strcspn(buf, " \t\r\n,")] = 0;
			snprintf(node, len, "%s", buf);
			*from = "the first line of SLURM_HOSTFILE";
			return node[0] ? 0 : -EINVAL;
		}
	}
	/* a heterogeneous step's rank 0 is in its first component */
	for (i = pn_boot_env(env, "SLURM_HET_SIZE") || pn_boot_env(env, "SLURM_PACK_SIZE") ? 0 : 2;
	     i < PN_ARRAY_SIZE(lists) && !list; i++)
		if ((list = pn_boot_env(env, lists[i])))
			*from = lists[i];
	if (!list)
		return pn_err(-EINVAL, "no SLURM_STEP_NODELIST");
	if (pn_hostlist_nth(list, 0, node, len))
		return pn_err(-EINVAL, "%s='%.80s' is not a Slurm host list", *from, list);
	return 0;
}

static int rdv_slurm(struct pn_boot_cfg *cfg)
{
	const char *const *env = cfg->knobs.env;
	struct pn_rdv *r = &cfg->rdv;
	const char *from = NULL, *resv = pn_boot_env(env, "SLURM_STEP_RESV_PORTS");
	char node[256], ctx[200];
	int ret = slurm_root(cfg, node, sizeof(node), &from);

	if (ret)
		return ret;
	slurm_addr(r, env, node);
	if (resv)
		r->nports = port_list(resv, r->ports, PN_RDV_MAX_PORTS - PN_RDV_DERIVED);
	pn_boot_ctx(cfg, ctx, sizeof(ctx));
	rdv_add_ports(r, ctx);
	snprintf(r->how, sizeof(r->how), "Slurm step %s: rank 0 on %s (%s), port %s", cfg->jobid,
		 node, from, resv ? "SLURM_STEP_RESV_PORTS, else from the job" : "from the job");
	snprintf(r->node, sizeof(r->node), "%s", node);
	return 0;
}

/* "JOB;tcp://a,b:port;tcp6://[c]:port": mpirun's addresses, IPv4 first. */
static int rdv_ompi(struct pn_boot_cfg *cfg)
{
	const char *uri = pn_boot_env(cfg->knobs.env, "OMPI_MCA_orte_hnp_uri"), *p;
	struct pn_rdv *r = &cfg->rdv;
	char ctx[200];
	int v6;

	if (!uri)
		return pn_err(-EINVAL, "no OMPI_MCA_orte_hnp_uri (mpirun's address)");
	for (v6 = 0; v6 < 2; v6++) {
		for (p = strchr(uri, ';'); p; p = strchr(p + 1, ';')) {
			const char *a = p + 1, *end = a + strcspn(a, ";"), *port;

			if (strncmp(a, v6 ? "tcp6://" : "tcp://", v6 ? 7 : 6))
				continue;
			a += v6 ? 7 : 6;
			for (port = end; port > a && *port != ':'; port--)
				;
			while (a < port) {
				const char *c = a + strcspn(a, ",");

				if (c > port)
					c = port;
				if (*a == '[' && c > a + 1 && c[-1] == ']')
					rdv_add_host(r, a + 1, (size_t)(c - a - 2));
				else
					rdv_add_host(r, a, (size_t)(c - a));
				a = c + 1;
			}
		}
	}
	if (!r->nhosts)
		return pn_err(-EINVAL, "no address in OMPI_MCA_orte_hnp_uri='%.80s'", uri);
	pn_boot_ctx(cfg, ctx, sizeof(ctx));
	rdv_add_ports(r, ctx);
	snprintf(r->how, sizeof(r->how), "Open MPI job %s: rank 0 on mpirun's host (%s), port "
		 "from the job", cfg->jobid, r->hosts[0]);
	r->hnp = 1;
	return 0;
}

int pn_rdv_launcher(struct pn_boot_cfg *cfg)
{
	const char *const *env = cfg->knobs.env;
	const char *addr = pn_boot_env(env, "MASTER_ADDR"), *port = pn_boot_env(env, "MASTER_PORT");
	const char *store = pn_boot_env(env, "TORCHELASTIC_USE_AGENT_STORE");
	struct pn_rdv *r = &cfg->rdv;
	char ctx[200];
	int ret = 1, p;

	memset(r, 0, sizeof(*r));
	r->any = r->probe = 1;
	if (addr && *addr && port && !pn_parse_int(port, &p) && p > 0 && p < 65536) {
		/* torchrun's agent may hold MASTER_PORT for its own store */
		rdv_add_host(r, addr, strlen(addr));
		if (!(store && !strcmp(store, "True")))
			r->ports[r->nports++] = p;
		pn_boot_ctx(cfg, ctx, sizeof(ctx));
		rdv_add_ports(r, ctx);
		snprintf(r->how, sizeof(r->how), "MASTER_ADDR=%.60s, MASTER_PORT=%d or a port from "
			 "the job", addr, p);
		return 0;
	}
	if (!strcmp(cfg->launcher, "srun"))
		ret = rdv_slurm(cfg);
	else if (!strcmp(cfg->launcher, "mpirun"))
		ret = rdv_ompi(cfg);
	if (ret <= 0 && r->nhosts)
		return 0;
	{
		char why[200];

		/* a MASTER_ADDR or MASTER_PORT given but not used is named */
		if (ret < 0)
			snprintf(why, sizeof(why), "%s", pn_errmsg(ret));
		else if ((addr && *addr) != !!port)
			snprintf(why, sizeof(why), "%s=%.60s without %s", port ? "MASTER_PORT" :
				 "MASTER_ADDR", port ? port : addr, port ? "MASTER_ADDR" : "MASTER_PORT");
		else if (port)
			snprintf(why, sizeof(why), "MASTER_PORT='%.60s' is not a port 1..65535", port);
		else
			snprintf(why, sizeof(why), "it gives none");
		return pn_err(-EINVAL, "no rendezvous address for %d ranks under %s (%s): give every "
			      "rank --root HOST:PORT or PENNY_ROOT=HOST:PORT (rank 0's host and a "
			      "free port)", cfg->nranks, cfg->launcher, why);
	}
}

/*
 * Rank 0 of a derived rendezvous is where the others look: Slurm's node
 * name is this node's (SLURMD_NODENAME), one of mpirun's addresses is this
 * host's (it can bind it).  0, or -EINVAL with the recipe.
 */
int pn_rdv_check_root(const struct pn_boot_cfg *cfg)
{
	const struct pn_rdv *r = &cfg->rdv;
	int i;

	if (!strcmp(cfg->launcher, "srun") && r->node[0]) {
		const char *me = pn_boot_env(cfg->knobs.env, "SLURMD_NODENAME");

		if (me && strcmp(me, r->node))
			return pn_err(-EINVAL, "rank 0 runs on node %.60s, but the other ranks look for it "
				      "on %.60s (%s): give every rank --root HOST:PORT or PENNY_ROOT",
				      me, r->node, r->how);
		return 0;
	}
	if (r->hnp) {
		for (i = 0; i < r->nhosts; i++) {
			struct sockaddr_storage ss;
			socklen_t sl;
			int fd;

			if (pn_sock_resolve(r->hosts[i], 0, 0, &ss, &sl)) {
				pn_err_clear();
				continue;
			}
			fd = pn_sock_listen_addr((struct sockaddr *)&ss, sl, 1, NULL, NULL);
			if (fd >= 0) {
				close(fd);
				return 0;
			}
		}
		return pn_err(-EINVAL, "rank 0 is not on mpirun's host (%s), where the other ranks "
			      "look for it: run mpirun on rank 0's host (the first of -H), or give "
			      "every rank --root HOST:PORT or PENNY_ROOT", r->hosts[0]);
	}
	return 0;
}
