/* SPDX-License-Identifier: MIT */
/* Launcher environments, self-launch and the TCP rendezvous. */
#define _GNU_SOURCE
#include "boot.h"
#include "log.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

void pn_boot_cfg_init(struct pn_boot_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->rank = -1;
	cfg->nranks = -1;
	cfg->local_rank = -1;
	cfg->timeout = 60.0;
	cfg->listen_fd = -1;
}

const char *pn_host_id(void)
{
	static char id[PN_HOSTID_LEN];
	char ns[64] = "";
	ssize_t n;
	const char *over = getenv("PENNY_NODE_ID");

	if (id[0])
		return id;
	if (over && *over) {
		snprintf(id, sizeof(id), "node:%s", over);
		return id;
	}
	/* network namespace inode: netns "hosts" on one machine are hosts */
	n = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
	if (n > 0)
		ns[n] = 0;
	snprintf(id, sizeof(id), "%.60s/%s", pn_hostname(), ns);
	return id;
}

static int env_int(const char *name, int *v)
{
	const char *s = getenv(name);

	return s && !pn_parse_int(s, v) ? 0 : -1;
}

static void hex_cookie(const char *s, uint8_t cookie[16], int *have)
{
	int i;

	for (i = 0; i < 16 && s[2 * i] && s[2 * i + 1]; i++) {
		unsigned x;

		if (sscanf(s + 2 * i, "%2x", &x) != 1)
			break;
		cookie[i] = (uint8_t)x;
	}
	if (i == 16 && !s[32]) {
		*have = 1;
	} else {
		/* any other string: hash it (FNV-1a over two lanes) */
		uint64_t h1 = 1469598103934665603ull, h2 = 0x9e3779b97f4a7c15ull;
		const char *p;

		for (p = s; *p; p++) {
			h1 = (h1 ^ (uint8_t)*p) * 1099511628211ull;
			h2 = (h2 ^ (uint8_t)*p) * 0x100000001b3ull + 7;
		}
		memcpy(cookie, &h1, 8);
		memcpy(cookie + 8, &h2, 8);
		*have = 1;
	}
}

int pn_boot_cfg_from_env(struct pn_boot_cfg *cfg)
{
	int r = -1, n = -1, lr = -1;
	const char *s;
	static char rootbuf[300];

	if (cfg->rank >= 0 || cfg->nranks >= 0) {
		if (cfg->rank < 0 || cfg->nranks <= 0 || cfg->rank >= cfg->nranks)
			return pn_err(-EINVAL, "--rank and --nranks go together, with 0 <= rank < nranks");
		if (!cfg->launcher[0])
			snprintf(cfg->launcher, sizeof(cfg->launcher), "explicit");
	} else if (!env_int("OMPI_COMM_WORLD_RANK", &r) && !env_int("OMPI_COMM_WORLD_SIZE", &n)) {
		env_int("OMPI_COMM_WORLD_LOCAL_RANK", &lr);
		snprintf(cfg->launcher, sizeof(cfg->launcher), "mpirun");
		if ((s = getenv("OMPI_MCA_ess_base_jobid")) || (s = getenv("PMIX_NAMESPACE")))
			snprintf(cfg->jobid, sizeof(cfg->jobid), "%s", s);
	} else if (!env_int("SLURM_PROCID", &r) && !env_int("SLURM_NTASKS", &n)) {
		env_int("SLURM_LOCALID", &lr);
		snprintf(cfg->launcher, sizeof(cfg->launcher), "srun");
		if ((s = getenv("SLURM_JOB_ID")))
			snprintf(cfg->jobid, sizeof(cfg->jobid), "%s.%s", s,
				 getenv("SLURM_STEP_ID") ? getenv("SLURM_STEP_ID") : "0");
	} else if (!env_int("PMI_RANK", &r) && !env_int("PMI_SIZE", &n)) {
		env_int("MPI_LOCALRANKID", &lr);
		snprintf(cfg->launcher, sizeof(cfg->launcher), "pmi");
	} else if (!env_int("RANK", &r) && !env_int("WORLD_SIZE", &n)) {
		env_int("LOCAL_RANK", &lr);
		snprintf(cfg->launcher, sizeof(cfg->launcher), "torchrun");
		if ((s = getenv("TORCHELASTIC_RUN_ID")))
			snprintf(cfg->jobid, sizeof(cfg->jobid), "%s", s);
	} else {
		r = 0;
		n = 1;
		snprintf(cfg->launcher, sizeof(cfg->launcher), "none");
	}
	if (cfg->rank < 0) {
		if (n <= 0 || r < 0 || r >= n)
			return pn_err(-EINVAL, "launcher environment (%s) gives rank %d of %d",
				      cfg->launcher, r, n);
		cfg->rank = r;
		cfg->nranks = n;
		if (cfg->local_rank < 0)
			cfg->local_rank = lr;
	}
	if (!cfg->root) {
		const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");

		if ((s = getenv("PENNY_ROOT")) && *s) {
			cfg->root = s;
		} else if (addr && port) {
			snprintf(rootbuf, sizeof(rootbuf), "%s:%s", addr, port);
			cfg->root = rootbuf;
		}
	}
	if (!cfg->have_cookie) {
		if ((s = getenv("PENNY_COOKIE")) && *s)
			hex_cookie(s, cfg->cookie, &cfg->have_cookie);
		else if (cfg->jobid[0])
			hex_cookie(cfg->jobid, cfg->cookie, &cfg->have_cookie);
		else if (cfg->root)
			hex_cookie(cfg->root, cfg->cookie, &cfg->have_cookie);
	}
	return 0;
}

static int random_bytes(uint8_t *buf, size_t len)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

int pn_boot_selflaunch(int np, struct pn_boot_cfg *cfg, int *parent, int *status)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	static char rootbuf[64];
	pid_t *pids;
	int fd, i, left, worst = 0, one = 1;
	double kill_at = 0;

	*parent = 0;
	*status = 0;
	if (np < 1)
		return pn_err(-EINVAL, "--np must be at least 1");
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return pn_err(-errno, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1024) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl)) {
		int e = errno;

		close(fd);
		return pn_err(-e, "cannot listen on 127.0.0.1: %s", strerror(e));
	}
	snprintf(rootbuf, sizeof(rootbuf), "127.0.0.1:%d", ntohs(sa.sin_port));
	if (random_bytes(cfg->cookie, sizeof(cfg->cookie))) {
		close(fd);
		return pn_err(-EIO, "cannot read /dev/urandom");
	}
	cfg->have_cookie = 1;
	cfg->root = rootbuf;
	cfg->nranks = np;
	snprintf(cfg->launcher, sizeof(cfg->launcher), "self");

	pids = calloc((size_t)np, sizeof(*pids));
	if (!pids) {
		close(fd);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (i = 0; i < np; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			int e = errno, j;

			for (j = 0; j < i; j++)
				kill(pids[j], SIGKILL);
			for (j = 0; j < i; j++)
				waitpid(pids[j], NULL, 0);
			free(pids);
			close(fd);
			return pn_err(-e, "fork: %s", strerror(e));
		}
		if (pid == 0) {
			free(pids);
			cfg->rank = i;
			cfg->local_rank = i;
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
	close(fd);
	*parent = 1;
	left = np;
	while (left > 0) {
		int st;
		pid_t pid = waitpid(-1, &st, kill_at > 0 ? WNOHANG : 0);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pid == 0) {
			if (pn_now() > kill_at) {
				for (i = 0; i < np; i++)
					if (pids[i] > 0)
						kill(pids[i], SIGKILL);
				kill_at = pn_now() + 3600;
			}
			usleep(20000);
			continue;
		}
		for (i = 0; i < np; i++)
			if (pids[i] == pid)
				pids[i] = 0;
		left--;
		if (WIFEXITED(st) && WEXITSTATUS(st)) {
			if (WEXITSTATUS(st) > worst)
				worst = WEXITSTATUS(st);
		} else if (WIFSIGNALED(st)) {
			if (worst < 1)
				worst = 1;
		}
		/* one rank failed: the others must end by themselves within the
		 * timeout (they report the dead peer); after that, stop them */
		if (worst && kill_at == 0)
			kill_at = pn_now() + cfg->timeout + 5.0;
	}
	free(pids);
	*status = worst;
	return 0;
}
