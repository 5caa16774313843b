/* SPDX-License-Identifier: MIT */
/*
 * Launchers: who a rank is from the launcher's environment (mpirun, srun,
 * PMI, torchrun, explicit options), the self-launch of --np local ranks
 * (fork, CPU binding, death with the parent, signal forwarding, reaping,
 * shared-memory cleanup) and the one report of the ranks' error lines.
 * The rendezvous and the collectives are in engine/boot.c.
 */
#define _GNU_SOURCE
#include "engine/boot.h"
#include "engine/launch.h"
#include "base/file.h"
#include "base/sock.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static struct pn_boot_knobs knobs = { .site_secret = PN_BOOT_SITE_SECRET };

void pn_boot_set_knobs(const struct pn_boot_knobs *k)
{
	static const char **snap;
	size_t n = 0;

	knobs = *k;
	while (k->env && k->env[n])
		n++;
	free(snap);
	/* the array as it is now: a later setenv may move the process's */
	snap = calloc(n + 1, sizeof(*snap));
	if (snap) {
		memcpy(snap, k->env, n * sizeof(*snap));
		knobs.env = snap;
	}
}

void pn_boot_cfg_init(struct pn_boot_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->knobs = knobs;
	cfg->rank = -1;
	cfg->nranks = -1;
	cfg->local_rank = -1;
	cfg->timeout = 60.0;
	cfg->listen_fd = -1;
	cfg->err_fd = -1;
}

void pn_host_id(const char *node_id, char *id, size_t len)
{
	char ns[64] = "";
	ssize_t n;

	if (node_id && *node_id) {
		snprintf(id, len, "node:%s", node_id);
		return;
	}
	/* network namespace inode: netns "hosts" on one machine are hosts */
	n = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
	if (n > 0)
		ns[n] = 0;
	/* the whole host name (Linux's longest is 64 bytes): two hosts alike in
	 * their first 60 bytes were one node, their ranks meeting over shm */
	snprintf(id, len, "%.64s/%s", pn_hostname(), ns);
}

/*
 * A launcher variable: absent (1), a decimal number in [lo, hi] (0), or
 * -EINVAL with a message naming it.
 */
static int env_num(const char *const *env, const char *name, int lo, int hi, int *v)
{
	const char *s = pn_boot_env(env, name), *p;
	long long x = 0;

	if (!s)
		return 1;
	for (p = s; *p >= '0' && *p <= '9'; p++)
		if (x <= hi)
			x = x * 10 + (*p - '0');
	if (!*s || *p)
		return pn_err(-EINVAL, "%s='%.40s' is not a number", name, s);
	if (x > hi)
		return pn_err(-EINVAL, "%s=%.40s is more than %d", name, s, hi);
	if (x < lo)
		return pn_err(-EINVAL, "%s=%lld is less than %d", name, x, lo);
	*v = (int)x;
	return 0;
}

struct launcher_env {
	const char *name, *rank, *size, *local_rank, *local_size;
	int by_rank;		/* its rank variable alone says it is this launcher */
};

static const struct launcher_env launchers[] = {
	{ "mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
	  "OMPI_COMM_WORLD_LOCAL_SIZE", 1 },
	{ "srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL, 0 },
	{ "pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", NULL, 1 },
	/* RANK alone is too common a name to mean torchrun */
	{ "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", 0 },
};

/* rank, size and local rank/size of launcher l; every variable set must be valid */
static int launcher_read(const char *const *env, const struct launcher_env *l, int *r, int *n,
			 int *lr, int *ls)
{
	int ret;

	*lr = -1;
	*ls = -1;
	ret = env_num(env, l->size, 1, PN_BOOT_MAX_RANKS, n);
	if (ret > 0)
		return pn_err(-EINVAL, "%s is set but %s is not", l->rank, l->size);
	if (ret || (ret = env_num(env, l->rank, 0, INT_MAX, r)) < 0)
		return ret;
	if (ret > 0)
		return pn_err(-EINVAL, "%s is set but %s is not", l->size, l->rank);
	if (*r >= *n)
		return pn_err(-EINVAL, "%s=%d is not below %s=%d", l->rank, *r, l->size, *n);
	if (l->local_size && (ret = env_num(env, l->local_size, 1, *n, ls)) < 0)
		return ret;
	if ((ret = env_num(env, l->local_rank, 0, INT_MAX, lr)) < 0)
		return ret;
	if (*lr >= (*ls > 0 ? *ls : *n))
		return *ls > 0 ? pn_err(-EINVAL, "%s=%d is not below %s=%d", l->local_rank, *lr,
					l->local_size, *ls)
			       : pn_err(-EINVAL, "%s=%d is not below %s=%d", l->local_rank, *lr,
					l->size, *n);
	return 0;
}

/*
 * PENNY_ROOT_FD: rank 0's rendezvous socket, inherited already bound and
 * listening on --root's port (penny check's fresh ranks: no other process
 * can take the port between its choice and the rendezvous).  Anything else
 * is refused, naming the variable.
 */
static int adopt_root_fd(struct pn_boot_cfg *cfg, const char *s)
{
	char host[256], *end;
	int port = 0;
	long fd;

	errno = 0;
	fd = strtol(s, &end, 10);
	if (!*s || strspn(s, "0123456789") != strlen(s) || *end || errno || fd < 3 || fd > INT_MAX)
		return pn_err(-EINVAL, "PENNY_ROOT_FD=%.40s is not a descriptor number above 2", s);
	if (cfg->rank != 0 || cfg->nranks < 2 || !cfg->root ||
	    pn_parse_hostport(cfg->root, host, sizeof(host), &port))
		return pn_err(-EINVAL, "PENNY_ROOT_FD is for rank 0 of a job with --root HOST:PORT");
	if (pn_sock_listening_port((int)fd) != port)
		return pn_err(-EINVAL, "PENNY_ROOT_FD=%ld is not a TCP socket listening on port %d "
			      "(--root %s)", fd, port, cfg->root);
	fcntl((int)fd, F_SETFD, FD_CLOEXEC);
	cfg->listen_fd = (int)fd;
	return 0;
}

/* A Slurm step's id ("SLURM_STEP_ID", older "SLURM_STEPID"); NULL in a batch script. */
static const char *slurm_step(const char *const *env)
{
	const char *s = pn_boot_env(env, "SLURM_STEP_ID");

	return s ? s : pn_boot_env(env, "SLURM_STEPID");
}

/* Is launcher l's environment there (see boot.h)? */
static int launcher_here(const char *const *env, const struct launcher_env *l)
{
	if (!pn_boot_env(env, l->rank) || !(l->by_rank || pn_boot_env(env, l->size)))
		return 0;
	/* a batch script has SLURM_PROCID and SLURM_NTASKS too: one process */
	return strcmp(l->name, "srun") || slurm_step(env);
}

/* The job id and the single-node hint of launcher l. */
static int launcher_job(struct pn_boot_cfg *cfg, const struct launcher_env *l, int n, int ls)
{
	const char *const *env = cfg->knobs.env;
	const char *s;
	int ret;

	if (l->local_size)
		cfg->single_node = ls == n;
	if (!strcmp(l->name, "mpirun")) {
		if ((s = pn_boot_env(env, "OMPI_MCA_ess_base_jobid")) ||
		    (s = pn_boot_env(env, "PMIX_NAMESPACE")))
			snprintf(cfg->jobid, sizeof(cfg->jobid), "%s", s);
	} else if (!strcmp(l->name, "srun")) {
		ret = env_num(env, "SLURM_STEP_NUM_NODES", 1, n, &ls);
		if (ret > 0)
			ret = env_num(env, "SLURM_NNODES", 1, n, &ls);
		if (ret < 0)
			return pn_err_ctx(ret, "launcher environment (srun)");
		cfg->single_node = ret == 0 && ls == 1;
		if ((s = pn_boot_env(env, "SLURM_JOB_ID")))
			snprintf(cfg->jobid, sizeof(cfg->jobid), "%.30s.%.30s", s, slurm_step(env));
	} else if (!strcmp(l->name, "torchrun")) {
		if ((s = pn_boot_env(env, "TORCHELASTIC_RUN_ID")))
			snprintf(cfg->jobid, sizeof(cfg->jobid), "%s", s);
	}
	return 0;
}

int pn_boot_cfg_from_env(struct pn_boot_cfg *cfg)
{
	const char *const *env = cfg->knobs.env;
	int r = -1, n = -1, lr = -1, ls = -1, ret;
	const struct launcher_env *l = NULL;
	const char *s;
	size_t i;

	/* "node:ID" must fit the hello whole: cut, two nodes could be one */
	if ((s = cfg->knobs.node_id) && strlen(s) > PN_HOSTID_LEN - 6)
		return pn_err(-EINVAL, "PENNY_NODE_ID='%.40s...' is longer than %d characters", s,
			      PN_HOSTID_LEN - 6);
	/* ... and be read alike by every rank: the hello shows a byte outside
	 * printable ASCII as '?', so "a\tb" was one node to some, two to others */
	for (i = 0; s && s[i]; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return pn_err(-EINVAL, "PENNY_NODE_ID='%.40s' has a byte that is not printable "
				      "ASCII (at %zu)", s, i + 1);
	if (cfg->rank >= 0 || cfg->nranks >= 0) {
		if (cfg->nranks > PN_BOOT_MAX_RANKS)
			return pn_err(-EINVAL, "--nranks %d is more than %d, the most ranks a job can have",
				      cfg->nranks, PN_BOOT_MAX_RANKS);
		if (cfg->rank < 0 || cfg->nranks <= 0 || cfg->rank >= cfg->nranks)
			return pn_err(-EINVAL, "--rank and --nranks go together, with 0 <= rank < nranks");
		if (!cfg->launcher[0])
			snprintf(cfg->launcher, sizeof(cfg->launcher), "explicit");
	} else {
		for (i = 0; i < PN_ARRAY_SIZE(launchers) && !l; i++)
			if (launcher_here(env, &launchers[i]))
				l = &launchers[i];
	}
	if (l) {
		ret = launcher_read(env, l, &r, &n, &lr, &ls);
		if (ret)
			return pn_err_ctx(ret, "launcher environment (%s)", l->name);
		snprintf(cfg->launcher, sizeof(cfg->launcher), "%s", l->name);
		ret = launcher_job(cfg, l, n, ls);
		if (ret)
			return ret;
	} else if (cfg->rank < 0) {
		if (cfg->root)
			return pn_err(-EINVAL, "--root %s needs --rank and --nranks (or a launcher's "
				      "environment)", cfg->root);
		r = 0;
		n = 1;
		snprintf(cfg->launcher, sizeof(cfg->launcher), "none");
	}
	if (cfg->rank < 0) {
		cfg->rank = r;
		cfg->nranks = n;
		if (cfg->local_rank < 0)
			cfg->local_rank = lr;
	}
	if (!cfg->root && (s = cfg->knobs.root) && *s)
		cfg->root = s;
	/* a self-launched rank's socket comes from its launcher, never from
	 * a PENNY_ROOT_FD it inherited; a process alone has no rendezvous */
	if ((s = cfg->knobs.root_fd) && cfg->listen_fd < 0 && strcmp(cfg->launcher, "self") &&
	    strcmp(cfg->launcher, "none"))
		return adopt_root_fd(cfg, s);
	return 0;
}

/*
 * The CPUs this process had before a self-launcher pinned it to one (a
 * rank's "home"): what a launch of its own (check's node allreduce, run
 * afresh) spreads its ranks over.  Unset: the process was never pinned.
 */
static cpu_set_t home_cpus;
static int home_set;

int pn_boot_home_cpus(uint8_t *mask, size_t len)
{
	cpu_set_t now;
	const cpu_set_t *s = &home_cpus;
	int cpu, n = 0;

	if (!home_set) {
		if (sched_getaffinity(0, sizeof(now), &now))
			return -errno;
		s = &now;
	}
	memset(mask, 0, len);
	for (cpu = 0; cpu < CPU_SETSIZE && (size_t)cpu / 8 < len; cpu++)
		if (CPU_ISSET(cpu, s)) {
			mask[cpu / 8] |= (uint8_t)(1u << (cpu % 8));
			n++;
		}
	return n;
}

/*
 * Like mpirun's default for small jobs: when every rank can have a core of
 * its own, pin rank i to the i-th allowed CPU (PENNY_BIND=none keeps them
 * free).  Busy-polling ranks then do not chase each other across cores.
 * The CPUs allowed are the launcher's home (above) when it was itself a
 * pinned rank: a nested launch from a pinned rank must not put all its
 * ranks on that one core (check's node allreduce under --np ran every GPU
 * rank on one CPU at half its speed).
 */
static void bind_rank(const struct pn_boot_cfg *cfg, int i, int np)
{
	cpu_set_t allowed, one;
	int cpu, k = 0;

	if (cfg->knobs.bind_none)
		return;
	if (home_set)
		allowed = home_cpus;
	else if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	if (np > CPU_COUNT(&allowed)) {
		/* not a core each: the ranks share the launcher's home */
		if (home_set)
			sched_setaffinity(0, sizeof(allowed), &allowed);
		return;
	}
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		if (k++ == i) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			home_cpus = allowed;
			home_set = 1;
			if (!sched_setaffinity(0, sizeof(one), &one))
				PN_DBG(PN_LOG_BOOT, "rank %d of %d pinned to CPU %d (of %d)", i, np,
				       cpu, CPU_COUNT(&allowed));
			return;
		}
	}
}

/*
 * File descriptors: rank 0 holds one socket per rank (and the tcp transport
 * one per remote peer), so a job of n ranks needs about n + 64.  Raise the
 * soft limit as far as the hard one allows; when even that is too little
 * and must_fit, fail before anything starts.
 */
int pn_boot_fd_budget(int n, int must_fit)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)n + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need)
		return 0;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < need && must_fit)
		return pn_err(-EMFILE, "a job of %d ranks needs %llu open files on rank 0, the limit is "
			      "%llu (ulimit -n)", n, (unsigned long long)need,
			      (unsigned long long)rl.rlim_cur);
	return 0;
}

/*
 * The job's shared-memory segments are /dev/shm/penny-<first 8 cookie bytes
 * in hex>-... (transport/shm.c, shm_name).  Removing them is async-signal-
 * safe (open, getdents64, unlinkat): the ranks do it from a signal handler.
 */
static void shm_prefix(char *buf, size_t len, const uint8_t cookie[16])
{
	snprintf(buf, len, "penny-%02x%02x%02x%02x%02x%02x%02x%02x-", cookie[0], cookie[1],
		 cookie[2], cookie[3], cookie[4], cookie[5], cookie[6], cookie[7]);
}

struct pn_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static void shm_sweep(const char *prefix)
{
	uint64_t buf[512];
	size_t plen = strlen(prefix);
	int pass, gone = 1;

	/* entries removed while reading a directory may hide others: again
	 * until a pass removes nothing */
	for (pass = 0; pass < 4 && gone; pass++) {
		int dfd = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		long n, off;

		if (dfd < 0)
			return;
		gone = 0;
		while ((n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
			for (off = 0; off < n;) {
				struct pn_dirent64 *d = (struct pn_dirent64 *)((char *)buf + off);

				if (!strncmp(d->d_name, prefix, plen) && !unlinkat(dfd, d->d_name, 0))
					gone++;
				off += d->d_reclen;
			}
		}
		close(dfd);
	}
}

/* A self-launched rank: its job's prefix, its launcher, where it reports. */
static char child_shm[48];
static pid_t child_parent;
static int child_errfd = -1;
static char child_line[64]; /* "penny: rank N: " */
static size_t child_line_len;

/*
 * SIGTERM (the launcher forwarded one, or died: PR_SET_PDEATHSIG), SIGINT,
 * SIGHUP: remove the job's segments, say why (to the launcher, or to
 * stderr when it is gone), go.
 */
static void child_term(int sig)
{
	struct sigaction ign;
	const char *why = getppid() != child_parent ? "the launcher died: stopped\n" :
			  sig == SIGTERM ? "terminated by SIGTERM\n" :
			  sig == SIGINT ? "terminated by SIGINT\n" : "terminated by SIGHUP\n";
	char line[128];
	size_t n = child_line_len, k = strlen(why);

	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, NULL);
	shm_sweep(child_shm);
	memcpy(line, child_line, n);
	memcpy(line + n, why, k);
	/* the launcher adds its own prefix */
	if (child_errfd < 0 || write(child_errfd, line + 7, n + k - 7) < 0) {
		if (write(STDERR_FILENO, line, n + k) < 0)
			_exit(128 + sig);
	}
	_exit(128 + sig);
}

static volatile sig_atomic_t parent_sig;

static void parent_term(int sig)
{
	parent_sig = sig;
}

static const int term_sigs[] = { SIGTERM, SIGINT, SIGHUP };

/* The ranks' error lines, as the parent collects them (bounded). */
struct err_lines {
	char *buf;
	size_t len, cap, dropped;
};

static void lines_add(struct err_lines *l, const char *s, size_t n)
{
	const size_t max = 4u << 20;

	if (l->len + n > l->cap && l->cap < max) {
		size_t cap = PN_MIN(max, PN_MAX(l->cap * 2, l->len + n + 4096));
		char *p = realloc(l->buf, cap);

		if (p) {
			l->buf = p;
			l->cap = cap;
		}
	}
	if (l->len + n > l->cap) {
		l->dropped += n;
		return;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void lines_printf(struct err_lines *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void lines_printf(struct err_lines *l, const char *fmt, ...)
{
	char s[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(s, sizeof(s) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n = PN_MIN(n, (int)sizeof(s) - 2);
	s[n++] = '\n';
	lines_add(l, s, (size_t)n);
}

static void lines_read(struct err_lines *l, int fd)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		lines_add(l, buf, (size_t)n);
}

/* A stop signal's name, for the launcher's line about a stopped rank. */
static const char *stop_name(int sig)
{
	return sig == SIGSTOP ? "SIGSTOP" : sig == SIGTSTP ? "SIGTSTP" :
	       sig == SIGTTIN ? "SIGTTIN: it read the terminal in the background" :
	       sig == SIGTTOU ? "SIGTTOU: it wrote to the terminal in the background" : "a signal";
}

/* What the launcher knows of a rank that has not ended. */
struct rank_state {
	double stopped;		/* when it was seen stopped (WUNTRACED), 0: running */
	int stopsig, killed;	/* killed: by the launcher, which said why */
};

/*
 * Wait for every rank; see boot.h.  pids[i] is rank i (0 once reaped).  A
 * rank stopped (SIGSTOP, a terminal's SIGTSTP or SIGTTOU: WUNTRACED; a
 * debugger's stops go to the debugger) cannot end by itself: once another
 * rank failed it is killed at once; when no rank fails (the others are
 * done, or wait for nothing) it is killed after it stayed stopped for the
 * job's timeout and the grace.
 */
static int reap_ranks(pid_t *pids, int np, int errfd, double timeout, double grace,
		      struct err_lines *l)
{
	int left = np, worst = 0, first = -1, killed = 0, forwarded = 0, i;
	struct rank_state *rs = calloc((size_t)np, sizeof(*rs));
	double kill_at = 0;

	while (left > 0) {
		struct pollfd pfd = { .fd = errfd, .events = POLLIN };
		double now = pn_now();
		pid_t pid;
		int st;

		while (left > 0 && (pid = waitpid(-1, &st, WNOHANG | WUNTRACED | WCONTINUED)) > 0) {
			for (i = 0; i < np && pids[i] != pid; i++)
				;
			if (i == np)
				continue;
			if (WIFSTOPPED(st) || WIFCONTINUED(st)) {
				if (rs) {
					rs[i].stopped = WIFSTOPPED(st) ? now : 0;
					rs[i].stopsig = WIFSTOPPED(st) ? WSTOPSIG(st) : 0;
				}
				continue;
			}
			pids[i] = 0;
			left--;
			if (WIFEXITED(st) && WEXITSTATUS(st)) {
				worst = PN_MAX(worst, WEXITSTATUS(st));
			} else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE) {
				/* its output cannot be written: 2, as penny's write errors */
				worst = PN_MAX(worst, 2);
				lines_printf(l, "rank %d (pid %d) was killed by SIGPIPE: its output's "
					     "reader went away", i, (int)pid);
			} else if (WIFSIGNALED(st)) {
				worst = PN_MAX(worst, 1);
				if (!killed && !(rs && rs[i].killed))
					lines_printf(l, "rank %d (pid %d) was killed by signal %d (%s)", i,
						     (int)pid, WTERMSIG(st), strsignal(WTERMSIG(st)));
			}
			if (worst && first < 0)
				first = i;
		}
		if (!left)
			break;
		if (parent_sig && !forwarded) {
			lines_printf(l, "got %s: stopping the ranks", strsignal(parent_sig));
			for (i = 0; i < np; i++)
				if (pids[i] > 0) {
					kill(pids[i], SIGTERM);
					kill(pids[i], SIGCONT);	/* a stopped one ends too */
				}
			forwarded = 1;
			if (!kill_at)
				kill_at = now + grace;
		}
		for (i = 0; rs && !killed && i < np; i++) {
			double for_s = now - rs[i].stopped;

			if (pids[i] <= 0 || !rs[i].stopped || rs[i].killed)
				continue;
			if (first >= 0)
				lines_printf(l, "rank %d (pid %d) was stopped (%s) when rank %d failed: "
					     "killed", i, (int)pids[i], stop_name(rs[i].stopsig), first);
			else if (for_s >= timeout + grace)
				lines_printf(l, "rank %d (pid %d) was stopped (%s) for %.3g s, longer than "
					     "the timeout (%g s): killed", i, (int)pids[i],
					     stop_name(rs[i].stopsig), for_s, timeout);
			else
				continue;
			kill(pids[i], SIGKILL);
			rs[i].killed = 1;
		}
		/* one rank failed: the others learn it at once (the abort notice,
		 * a closed connection) and end; one that does not is stuck */
		if (worst && !kill_at)
			kill_at = now + grace;
		if (kill_at && now >= kill_at && !killed) {
			for (i = 0; i < np; i++) {
				if (pids[i] <= 0 || (rs && rs[i].killed))
					continue;
				if (first >= 0)
					lines_printf(l, "rank %d (pid %d) had not ended %.0f s after rank %d "
						     "failed: killed", i, (int)pids[i], grace, first);
				else
					lines_printf(l, "rank %d (pid %d) had not ended %.0f s after the "
						     "launcher was stopped: killed", i, (int)pids[i], grace);
				kill(pids[i], SIGKILL);
			}
			killed = 1;
		}
		if (poll(&pfd, 1, 20) > 0)
			lines_read(l, errfd);
	}
	free(rs);
	lines_read(l, errfd);
	if (parent_sig)
		return 128 + parent_sig;
	return worst;
}

int pn_boot_selflaunch(int np, struct pn_boot_cfg *cfg, int *parent, int *status, char **report)
{
	static char rootbuf[64];
	struct sigaction act, old[PN_ARRAY_SIZE(term_sigs)];
	struct err_lines lines = { 0 };
	sigset_t block, oldmask;
	pid_t *pids, self = getpid();
	int fd, i, k, port = 0, errp[2], ret;
	double t0;

	*parent = 0;
	*status = 0;
	*report = NULL;
	if (np < 1 || np > PN_BOOT_MAX_NP)
		return pn_err(-EINVAL, "--np must be between 1 and %d", PN_BOOT_MAX_NP);
	/* the ranks are its own: a rank, size or rendezvous given would be ignored */
	if (cfg->rank >= 0 || cfg->nranks >= 0 || cfg->root)
		return pn_err(-EINVAL, "--np starts its own ranks and their rendezvous: --rank, "
			      "--nranks and --root are for ranks a launcher starts");
	if (!(cfg->timeout > 0))
		return pn_err(-EINVAL, "the timeout must be positive");
	ret = pn_boot_fd_budget(np, 1);
	if (ret)
		return ret;
	fd = pn_sock_listen("127.0.0.1", 0, 4096, &port);
	if (fd < 0)
		return pn_err(fd, "cannot listen on 127.0.0.1: %s", strerror(-fd));
	snprintf(rootbuf, sizeof(rootbuf), "127.0.0.1:%d", port);
	if (pn_boot_random(cfg->secret, sizeof(cfg->secret))) {
		close(fd);
		return pn_err(-EIO, "cannot read /dev/urandom");
	}
	cfg->have_secret = 1;
	cfg->root = rootbuf;
	/* the job's cookie is known before the fork: its /dev/shm names are
	 * swept by this launcher */
	if (pn_boot_random(cfg->nonce, sizeof(cfg->nonce))) {
		close(fd);
		return pn_err(-EIO, "cannot read /dev/urandom");
	}
	cfg->have_nonce = 1;
	snprintf(cfg->launcher, sizeof(cfg->launcher), "self");
	pn_boot_derive_cookie(cfg);
	cfg->nranks = np;
	shm_prefix(child_shm, sizeof(child_shm), cfg->cookie);

	pids = calloc((size_t)np, sizeof(*pids));
	if (!pids || pipe2(errp, O_CLOEXEC)) {
		ret = pids ? pn_err(-errno, "pipe: %s", strerror(errno)) : pn_err(-ENOMEM, "out of memory");
		free(pids);
		close(fd);
		return ret;
	}
	/* the ranks take over these signals before they can arrive */
	sigemptyset(&block);
	for (i = 0; i < (int)PN_ARRAY_SIZE(term_sigs); i++)
		sigaddset(&block, term_sigs[i]);
	sigprocmask(SIG_BLOCK, &block, &oldmask);
	memset(&act, 0, sizeof(act));
	t0 = pn_now();
	for (i = 0; i < np; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			int e = errno, j;

			for (j = 0; j < i; j++)
				kill(pids[j], SIGKILL);
			for (j = 0; j < i; j++)
				waitpid(pids[j], NULL, 0);
			shm_sweep(child_shm);
			sigprocmask(SIG_SETMASK, &oldmask, NULL);
			free(pids);
			close(fd);
			close(errp[0]);
			close(errp[1]);
			return pn_err(-e, "fork of rank %d: %s", i, strerror(e));
		}
		if (pid == 0) {
			/* die with the launcher, cleaning up (and if it is gone already) */
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			close(errp[0]);
			child_errfd = errp[1];
			child_parent = self;
			snprintf(child_line, sizeof(child_line), "penny: rank %d: ", i);
			child_line_len = strlen(child_line);
			act.sa_handler = child_term;
			for (k = 0; k < (int)PN_ARRAY_SIZE(term_sigs); k++)
				sigaction(term_sigs[k], &act, NULL);
			sigprocmask(SIG_SETMASK, &oldmask, NULL);
			if (getppid() != self)
				child_term(SIGTERM);
			free(pids);
			bind_rank(cfg, i, np);
			cfg->rank = i;
			cfg->local_rank = i;
			cfg->err_fd = errp[1];
			if (i == 0) {
				cfg->listen_fd = fd;
			} else {
				close(fd);
				cfg->listen_fd = -1;
			}
			return 0;
		}
		pids[i] = pid;
	}
	PN_DBG(PN_LOG_BOOT, "started %d ranks in %.3f s", np, pn_now() - t0);
	close(fd);
	close(errp[1]);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	parent_sig = 0;
	act.sa_handler = parent_term;
	for (i = 0; i < (int)PN_ARRAY_SIZE(term_sigs); i++)
		sigaction(term_sigs[i], &act, &old[i]);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	*parent = 1;
	*status = reap_ranks(pids, np, errp[0], cfg->timeout, PN_BOOT_GRACE, &lines);
	for (i = 0; i < (int)PN_ARRAY_SIZE(term_sigs); i++)
		sigaction(term_sigs[i], &old[i], NULL);
	close(errp[0]);
	/* what a rank killed during setup left behind */
	shm_sweep(child_shm);
	if (lines.dropped)
		lines_printf(&lines, "(%zu more bytes of error lines dropped)", lines.dropped);
	if (lines.len)
		*report = pn_boot_collapse(lines.buf, lines.len);
	free(lines.buf);
	free(pids);
	return 0;
}

/* ---- one report of the ranks' errors ---- */

/* "rank N: TEXT": N, and where TEXT starts; -1 for any other line */
static int line_rank(const char *s, size_t n, size_t *text)
{
	size_t i = 5;
	long r = 0;

	if (n < 8 || strncmp(s, "rank ", 5) || s[i] < '0' || s[i] > '9')
		return -1;
	while (i < n && s[i] >= '0' && s[i] <= '9' && r <= INT_MAX / 10)
		r = r * 10 + (s[i++] - '0');
	if (i + 1 >= n || s[i] != ':' || s[i + 1] != ' ')
		return -1;
	*text = i + 2;
	return (int)r;
}

struct line_group {
	const char *text;	/* the first line's text */
	size_t len;
	char *key;		/* the text with "rank R" of its own rank R as "\1" */
	int ranked;
	int *ranks;
	size_t n, cap;
};

/*
 * Ranks often name themselves in what they say ("rank 5 (host a) has no
 * port"): the same error on every rank.  The key replaces that with "\1".
 */
static char *self_key(const char *text, size_t len, int r)
{
	char own[24], *key = malloc(len + 1);
	size_t i = 0, k = 0, ol = (size_t)snprintf(own, sizeof(own), "rank %d", r);

	if (!key)
		return NULL;
	while (i < len) {
		if (r >= 0 && i + ol <= len && !memcmp(text + i, own, ol) &&
		    (i == 0 || !isalnum((unsigned char)text[i - 1])) &&
		    (i + ol == len || !isdigit((unsigned char)text[i + ol]))) {
			key[k++] = '\1';
			i += ol;
		} else {
			key[k++] = text[i++];
		}
	}
	key[k] = 0;
	return key;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

static void print_group(FILE *f, struct line_group *g)
{
	size_t i, j, k = 0;

	if (!g->ranked) {
		fprintf(f, "%.*s\n", (int)g->len, g->text);
		return;
	}
	qsort(g->ranks, g->n, sizeof(int), cmp_int);
	for (i = 0; i < g->n; i++) /* the same rank twice: once */
		if (!k || g->ranks[k - 1] != g->ranks[i])
			g->ranks[k++] = g->ranks[i];
	fprintf(f, "rank%s ", k > 1 ? "s" : "");
	for (i = 0; i < k; i = j) {
		for (j = i + 1; j < k && g->ranks[j] == g->ranks[j - 1] + 1; j++)
			;
		fprintf(f, "%s%d", i ? "," : "", g->ranks[i]);
		if (j - i > 1)
			fprintf(f, "%s%d", j - i > 2 ? "-" : ",", g->ranks[j - 1]);
	}
	if (k == 1) {
		fprintf(f, ": %.*s\n", (int)g->len, g->text);
		return;
	}
	fprintf(f, ": ");
	for (i = 0; g->key[i]; i++)
		if (g->key[i] == '\1')
			fprintf(f, "this rank");
		else
			fputc(g->key[i], f);
	fputc('\n', f);
}

char *pn_boot_collapse(const char *in, size_t len)
{
	struct line_group *g = NULL;
	size_t ng = 0, cap = 0, i, osize = 0;
	const char *p = in, *end = in + len;
	char *out = NULL;
	int ok = 1;
	FILE *f;

	while (ok && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p), t = 0;
		int r = line_rank(p, n, &t);
		const char *text = p + t;
		size_t tl = n - t;
		char *key;

		p += n + 1;
		if (!n)
			continue;
		key = self_key(text, tl, r);
		if (!key) {
			ok = 0;
			break;
		}
		for (i = 0; i < ng; i++)
			if (g[i].ranked == (r >= 0) && !strcmp(g[i].key, key))
				break;
		if (i < ng) {
			free(key);
		} else {
			if (ng == cap) {
				struct line_group *q = realloc(g, (cap = cap ? 2 * cap : 16) * sizeof(*g));

				if (!q) {
					free(key);
					ok = 0;
					break;
				}
				g = q;
			}
			memset(&g[ng], 0, sizeof(g[ng]));
			g[ng].text = text;
			g[ng].len = tl;
			g[ng].key = key;
			g[ng++].ranked = r >= 0;
		}
		if (r < 0)
			continue;
		if (g[i].n == g[i].cap) {
			int *q = realloc(g[i].ranks, (g[i].cap = g[i].cap ? 2 * g[i].cap : 8) * sizeof(int));

			if (!q) {
				ok = 0;
				break;
			}
			g[i].ranks = q;
		}
		g[i].ranks[g[i].n++] = r;
	}
	f = ok ? open_memstream(&out, &osize) : NULL;
	for (i = 0; f && i < ng; i++)
		print_group(f, &g[i]);
	if (f && fclose(f)) {
		free(out);
		out = NULL;
	}
	for (i = 0; i < ng; i++) {
		free(g[i].ranks);
		free(g[i].key);
	}
	free(g);
	return out;
}


int pn_boot_run_ranks(int np, struct pn_boot_cfg *cfg, int (*fn)(struct pn_boot_cfg *cfg, void *arg),
		      void *arg, int *status, char **report)
{
	int parent = 0, ret;

	*status = 0;
	*report = NULL;
	ret = pn_boot_selflaunch(np, cfg, &parent, status, report);
	if (ret || parent)
		return ret;
	/* a rank: never returns */
	_exit(fn(cfg, arg));
}

int pn_boot_tell(const struct pn_boot_cfg *cfg, const char *line, size_t len)
{
	ssize_t n;

	if (cfg->err_fd < 0)
		return -EBADF;
	n = write(cfg->err_fd, line, len);
	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}
