/* SPDX-License-Identifier: MIT */
/*
 * The job's secret: where a rank's comes from (boot.h, pn_boot_secret), the
 * public values derived from it (the job's tag and cookie), and MUNGE, by
 * which rank 0 hands a fresh secret to ranks of its own user on nodes that
 * share the cluster's MUNGE key (libmunge is opened at run time: a node
 * without it simply has no MUNGE).  Also the lowest helpers of the
 * bootstrap: the environment snapshot's lookup and random bytes.
 */
#define _GNU_SOURCE
#include "engine/boot.h"
#include "engine/launch.h"
#include "base/file.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/util.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *pn_boot_env(const char *const *env, const char *name)
{
	size_t n = strlen(name);

	for (; env && *env; env++)
		if (!strncmp(*env, name, n) && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

int pn_boot_random(uint8_t *buf, size_t len)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

int pn_boot_hex(const char *s, uint8_t *out, size_t n)
{
	size_t i;

	for (i = 0; i < 2 * n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return -EINVAL;
	if (s[2 * n])
		return -EINVAL;
	for (i = 0; i < n; i++) {
		unsigned x;

		sscanf(s + 2 * i, "%2x", &x);
		out[i] = (uint8_t)x;
	}
	return 0;
}

/* The job's public context: its launcher and job id, else the address. */
void pn_boot_ctx(const struct pn_boot_cfg *cfg, char *out, size_t len)
{
	if (cfg->jobid[0])
		snprintf(out, len, "%s:%s", cfg->launcher, cfg->jobid);
	else
		snprintf(out, len, "root:%s", cfg->root ? cfg->root : "");
}

void pn_boot_tag(const struct pn_boot_cfg *cfg, uint8_t tag[16])
{
	static const char label[] = "penny job tag";
	struct pn_sha256 s;
	uint8_t h[PN_SHA256_LEN];
	char ctx[200];

	pn_boot_ctx(cfg, ctx, sizeof(ctx));
	pn_sha256_init(&s);
	pn_sha256_update(&s, label, sizeof(label));
	pn_sha256_update(&s, ctx, strlen(ctx));
	pn_sha256_final(&s, h);
	memcpy(tag, h, 16);
}

void pn_boot_derive_cookie(struct pn_boot_cfg *cfg)
{
	static const char label[] = "penny job cookie";
	char ctx[200];
	const void *p[3] = { label, ctx, cfg->nonce };
	size_t l[3] = { sizeof(label), 0, sizeof(cfg->nonce) };
	uint8_t mac[PN_SHA256_LEN];

	pn_boot_ctx(cfg, ctx, sizeof(ctx));
	l[1] = strlen(ctx) + 1;
	pn_hmac_sha256(cfg->secret, sizeof(cfg->secret), 3, p, l, mac);
	memcpy(cfg->cookie, mac, sizeof(cfg->cookie));
	cfg->have_cookie = 1;
}

/* The secret from a file of ours (or, for the site's, root's) that only we can read. */
static int secret_read(struct pn_boot_cfg *cfg, int dfd, const char *name, const char *shown,
		       int site)
{
	char buf[4097];
	struct stat st;
	ssize_t n;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return pn_err(errno == ELOOP ? -EPERM : -errno, "cannot read the job secret '%s': %s",
			      shown, errno == ELOOP ? "a symbolic link" : strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (st.st_uid != geteuid() && !(site && st.st_uid == 0)) ||
	    (st.st_mode & (site ? 007 : 077))) {
		close(fd);
		return site ? pn_err(-EPERM, "refusing the site's job secret '%s': not a regular file "
				     "of root that no other user may read (chmod 600)", shown)
			    : pn_err(-EPERM, "refusing the job secret '%s': not a regular file of uid "
				     "%u that only it can read and write (chmod 600)", shown,
				     (unsigned)geteuid());
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || n > 4096)
		return pn_err(-EINVAL, "the job secret '%s' %s", shown,
			      n < 0 ? strerror(errno) : n ? "is longer than 4096 bytes" : "is empty");
	pn_sha256(buf, (size_t)n, cfg->secret);
	memset(buf, 0, sizeof(buf));
	cfg->have_secret = 1;
	snprintf(cfg->secret_src, sizeof(cfg->secret_src), "%s", shown);
	return 0;
}

/* mkdir that keeps an existing directory: 0 or -errno with a message */
static int mkdir_private(const char *dir)
{
	if (mkdir(dir, 0700) && errno != EEXIST)
		return pn_err(-errno, "cannot create '%s' for the job secret: %s", dir, strerror(errno));
	return 0;
}

/* Create the per-user secret file "cookie" in dfd, never replacing one. */
static int secret_create(int dfd, const char *shown)
{
	char tmp[64], line[66];
	uint8_t r[32];
	int fd, i, ret;

	snprintf(tmp, sizeof(tmp), ".cookie.%d", (int)getpid());
	unlinkat(dfd, tmp, 0); /* ours, from a process with our pid */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	ret = fd < 0 ? -errno : pn_boot_random(r, sizeof(r));
	for (i = 0; i < 32; i++)
		snprintf(line + 2 * i, 3, "%02x", r[i]);
	line[64] = '\n';
	if (!ret && (write(fd, line, 65) != 65 || fsync(fd)))
		ret = -errno;
	if (fd >= 0)
		close(fd);
	/* a private temporary file linked to the name: two ranks racing on a
	 * shared home get the same one */
	if (!ret && linkat(dfd, tmp, dfd, "cookie", 0) && errno != EEXIST)
		ret = -errno;
	unlinkat(dfd, tmp, 0);
	memset(line, 0, sizeof(line));
	memset(r, 0, sizeof(r));
	if (ret)
		return pn_err(ret, "cannot create the job secret '%s': %s", shown, strerror(-ret));
	return 1;
}

/*
 * The per-user secret: create it when missing, without ever replacing one,
 * then read it like any other.
 */
static int secret_default(struct pn_boot_cfg *cfg)
{
	const char *xdg = pn_boot_env(cfg->knobs.env, "XDG_CONFIG_HOME");
	const char *home = pn_boot_env(cfg->knobs.env, "HOME");
	char dir[PATH_MAX], shown[PATH_MAX + 16];
	int dfd, ret, made = 0;

	if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof(dir), "%s", xdg);
	else if (home && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.config", home);
	else if (home && home[0])
		return pn_err(-EINVAL, "no job secret: HOME='%.80s' is not an absolute path; set "
			      "PENNY_COOKIE or PENNY_COOKIE_FILE", home);
	else
		return pn_err(-EINVAL, "no job secret: set PENNY_COOKIE or PENNY_COOKIE_FILE (HOME is "
			      "not set)");
	if ((ret = mkdir_private(dir)))
		return ret;
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/penny");
	if ((ret = mkdir_private(dir)))
		return ret;
	snprintf(shown, sizeof(shown), "%s/cookie", dir);
	/* penny may run as root: only a real directory of ours that no one
	 * else can write (not a link to elsewhere) gets the file */
	dfd = pn_file_own_dir(dir, 022, "the job secret", "and writable by it alone");
	if (dfd < 0)
		return dfd;
	if (faccessat(dfd, "cookie", F_OK, AT_SYMLINK_NOFOLLOW) && errno == ENOENT)
		made = secret_create(dfd, shown);
	ret = made < 0 ? made : secret_read(cfg, dfd, "cookie", shown, 0);
	close(dfd);
	if (!ret && made > 0)
		snprintf(cfg->secret_src, sizeof(cfg->secret_src), "%.70s, made just now",
			 shown);
	return ret;
}

/* ---- MUNGE ---- */

#define MUNGE_OPT_UID_RESTRICTION 9
#define PN_MUNGE_LEN (sizeof("penny job secret") + 16 + 32)

static struct {
	int tried, ok;
	void *(*ctx_create)(void);
	void (*ctx_destroy)(void *ctx);
	int (*ctx_set)(void *ctx, int opt, ...);
	int (*encode)(char **cred, void *ctx, const void *buf, int len);
	int (*decode)(const char *cred, void *ctx, void **buf, int *len, uid_t *uid, gid_t *gid);
	const char *(*strerror)(int e);
} mg;

static int munge_open(void)
{
	void *h;

	if (mg.tried)
		return mg.ok ? 0 : -ENOENT;
	mg.tried = 1;
	h = dlopen("libmunge.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -ENOENT;
	*(void **)&mg.ctx_create = dlsym(h, "munge_ctx_create");
	*(void **)&mg.ctx_destroy = dlsym(h, "munge_ctx_destroy");
	*(void **)&mg.ctx_set = dlsym(h, "munge_ctx_set");
	*(void **)&mg.encode = dlsym(h, "munge_encode");
	*(void **)&mg.decode = dlsym(h, "munge_decode");
	*(void **)&mg.strerror = dlsym(h, "munge_strerror");
	mg.ok = mg.ctx_create && mg.ctx_destroy && mg.ctx_set && mg.encode && mg.decode &&
		mg.strerror;
	return mg.ok ? 0 : -ENOENT;
}

static void munge_payload(uint8_t *p, const uint8_t tag[16], const uint8_t secret[32])
{
	memcpy(p, "penny job secret", sizeof("penny job secret"));
	memcpy(p + sizeof("penny job secret"), tag, 16);
	memcpy(p + sizeof("penny job secret") + 16, secret, 32);
}

int pn_boot_munge_encode(const uint8_t tag[16], const uint8_t secret[32], char **cred)
{
	uint8_t p[PN_MUNGE_LEN];
	void *ctx;
	int e;

	*cred = NULL;
	if (munge_open())
		return pn_err(-ENOENT, "libmunge.so.2 is not installed");
	ctx = mg.ctx_create();
	if (!ctx)
		return pn_err(-ENOMEM, "out of memory");
	munge_payload(p, tag, secret);
	/* only processes of this user may decode it */
	e = mg.ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, (uid_t)geteuid());
	if (!e)
		e = mg.encode(cred, ctx, p, (int)sizeof(p));
	memset(p, 0, sizeof(p));
	mg.ctx_destroy(ctx);
	if (e) {
		free(*cred);
		*cred = NULL;
		return pn_err(-EACCES, "MUNGE: %s", mg.strerror(e));
	}
	return 0;
}

int pn_boot_munge_decode(const char *cred, const uint8_t tag[16], uint8_t secret[32])
{
	static const uint8_t zero[32];
	uint8_t want[PN_MUNGE_LEN];
	void *buf = NULL;
	uid_t uid = (uid_t)-1;
	gid_t gid;
	int len = 0, e, ret = 0;

	if (munge_open())
		return pn_err(-ENOENT, "libmunge.so.2 is not installed on this node");
	e = mg.decode(cred, NULL, &buf, &len, &uid, &gid);
	munge_payload(want, tag, zero);
	if (e)
		ret = pn_err(-EACCES, "this node cannot decode rank 0's MUNGE credential: %s",
			     mg.strerror(e));
	else if (uid != geteuid())
		ret = pn_err(-EACCES, "rank 0's MUNGE credential was made by uid %u, not this "
			     "rank's %u", (unsigned)uid, (unsigned)geteuid());
	else if (len != (int)sizeof(want) || memcmp(buf, want, sizeof("penny job secret") + 16))
		ret = pn_err(-EACCES, "rank 0's MUNGE credential is for another job");
	else
		memcpy(secret, (uint8_t *)buf + sizeof("penny job secret") + 16, 32);
	if (buf) {
		memset(buf, 0, (size_t)(len > 0 ? len : 0));
		free(buf);
	}
	memset(want, 0, sizeof(want));
	return ret;
}

/* ---- where a rank's secret comes from ---- */

/* The site's file: 1 when it is not there or not for this user. */
static int secret_site(struct pn_boot_cfg *cfg)
{
	const char *path = cfg->knobs.site_secret;
	struct stat st;
	int ret;

	if (!path || !*path || lstat(path, &st))
		return 1;
	if (access(path, R_OK))
		return 1; /* root's alone: not for this user's jobs */
	ret = secret_read(cfg, AT_FDCWD, path, path, 1);
	return ret;
}

/*
 * Open MPI's mpirun puts 16 random bytes from /dev/urandom in every rank's
 * environment (never on a command line): a secret of the job.
 */
static int secret_launcher(struct pn_boot_cfg *cfg)
{
	static const char label[] = "penny open mpi key";
	const char *k = pn_boot_env(cfg->knobs.env, "OMPI_MCA_orte_precondition_transports");
	struct pn_sha256 s;

	if (!k || strlen(k) < 16)
		return 1;
	pn_sha256_init(&s);
	pn_sha256_update(&s, label, sizeof(label));
	pn_sha256_update(&s, k, strlen(k));
	pn_sha256_final(&s, cfg->secret);
	cfg->have_secret = 1;
	snprintf(cfg->secret_src, sizeof(cfg->secret_src),
		 "Open MPI's job key (OMPI_MCA_orte_precondition_transports)");
	return 0;
}

/* A job started by a launcher (not by --rank): MUNGE may carry its secret. */
static int by_launcher(const struct pn_boot_cfg *cfg)
{
	return cfg->jobid[0] && strcmp(cfg->launcher, "explicit") && strcmp(cfg->launcher, "self");
}

/*
 * MUNGE for a launcher's rank 0 when libmunge and munged answer: 1 when not.
 * The other ranks take rank 0's credential in place of their own default.
 */
static int secret_munge(struct pn_boot_cfg *cfg)
{
	static const uint8_t zero[32];
	char *cred = NULL;

	if (!by_launcher(cfg))
		return 1;
	if (cfg->rank != 0) {
		/* decided when rank 0's CHALLENGE comes (pn_boot_secret_later) */
		cfg->munge = 1;
		snprintf(cfg->secret_src, sizeof(cfg->secret_src), "none yet");
		return 0;
	}
	if (pn_boot_munge_encode(zero, zero, &cred)) {
		pn_err_clear();
		return 1;
	}
	free(cred);
	if (pn_boot_random(cfg->secret, sizeof(cfg->secret)))
		return pn_err(-EIO, "cannot read /dev/urandom");
	cfg->have_secret = 1;
	cfg->munge = 1;
	snprintf(cfg->secret_src, sizeof(cfg->secret_src), "rank 0's, through MUNGE");
	return 0;
}

/* The job cannot run: exit 2 (-EINVAL, -EPERM), whatever the file system said. */
static int secret_exit2(int ret)
{
	if (ret && ret != -EPERM && ret != -EINVAL) {
		char why[320];

		snprintf(why, sizeof(why), "%s", pn_errmsg(ret));
		ret = pn_err(-EINVAL, "%s", why);
	}
	return ret;
}

int pn_boot_secret(struct pn_boot_cfg *cfg)
{
	const char *s = cfg->knobs.cookie;
	int ret;

	if (cfg->have_secret)
		return 0;
	if (s && *s) {
		pn_sha256(s, strlen(s), cfg->secret);
		cfg->have_secret = 1;
		snprintf(cfg->secret_src, sizeof(cfg->secret_src), "PENNY_COOKIE");
		return 0;
	}
	if ((s = cfg->knobs.cookie_file) && *s)
		ret = secret_read(cfg, AT_FDCWD, s, s, 0);
	else if ((ret = secret_launcher(cfg)) > 0 && (ret = secret_site(cfg)) > 0 &&
		 (ret = secret_munge(cfg)) > 0)
		ret = secret_default(cfg);
	return secret_exit2(ret);
}

int pn_boot_secret_later(struct pn_boot_cfg *cfg)
{
	return cfg->have_secret ? 0 : secret_exit2(secret_default(cfg));
}
