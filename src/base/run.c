/* SPDX-License-Identifier: MIT */
/* Another program run to its end, bounded (base/run.h). */
#define _GNU_SOURCE
#include "base/run.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* The caller's environment with r->env added or replaced (pointers into both). */
static char **make_env(const char *const *add)
{
	size_t n = 0, k = 0, i, j;
	char **e;

	while (environ && environ[n])
		n++;
	while (add && add[k])
		k++;
	e = calloc(n + k + 1, sizeof(*e));
	if (!e)
		return NULL;
	for (i = j = 0; i < n; i++) {
		size_t m, a;
		const char *eq = strchr(environ[i], '=');

		m = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
		for (a = 0; a < k; a++)
			if (strchr(add[a], '=') ? !strncmp(add[a], environ[i], m)
						: eq && strlen(add[a]) == m - 1 &&
							  !strncmp(add[a], environ[i], m - 1))
				break;
		if (a == k)
			e[j++] = environ[i];
	}
	/* a NAME without '=' only removes NAME */
	for (i = 0; i < k; i++)
		if (strchr(add[i], '='))
			e[j++] = (char *)add[i];
	return e;
}

/* In the child: async-signal-safe calls only (the caller may have threads). */
static void child(const struct pn_run *r, char **env, int out, int err, pid_t parent,
		  const cpu_set_t *cpus)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	sigset_t none;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (cpus && sched_setaffinity(0, sizeof(*cpus), cpus))
		_exit(127);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(127);
	/* the one passed as 3 (dup2 clears close-on-exec; the same number keeps it) */
	if (r->pass_fd > 2 && (r->pass_fd == 3 ? fcntl(3, F_SETFD, 0) : dup2(r->pass_fd, 3)) < 0)
		_exit(127);
	/* every other descriptor of the caller (sockets of its job) stays behind */
	if (close_range(r->pass_fd > 2 ? 4 : 3, ~0u, 0))
		for (int fd = r->pass_fd > 2 ? 4 : 3; fd < 65536; fd++)
			close(fd);
	execve(r->argv[0], (char *const *)r->argv, env);
	_exit(127);
}

/* Append what fd has to *buf (up to max bytes kept); 0 at EOF, 1 more to come. */
static int drain(int fd, char **buf, size_t *len, size_t max, int *over)
{
	char tmp[4096];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (n == 0)
		return 0;
	if (*len + (size_t)n > max) {
		*over = 1;
		n = (ssize_t)(max - *len);
	}
	if (n > 0) {
		char *nb = realloc(*buf, *len + (size_t)n + 1);

		if (!nb) {
			*over = 2;
			return 0;
		}
		memcpy(nb + *len, tmp, (size_t)n);
		*len += (size_t)n;
		nb[*len] = 0;
		*buf = nb;
	}
	return !*over;
}

/* Read what fd has into tail (TAIL bytes), keeping the last ones; 0 at EOF. */
#define TAIL 4096
static int keep_tail(int fd, char *tail, size_t *len)
{
	char tmp[TAIL];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return 0;
	if (*len + (size_t)n > TAIL) {
		size_t drop = *len + (size_t)n - TAIL;

		memmove(tail, tail + drop, *len - drop);
		*len -= drop;
	}
	memcpy(tail + *len, tmp, (size_t)n);
	*len += (size_t)n;
	return 1;
}

/* The last non-empty line of s (printable), into buf. */
static void last_line(const char *s, size_t len, char *buf, size_t blen)
{
	size_t end = len, beg, i, j;

	buf[0] = 0;
	while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r'))
		end--;
	for (beg = end; beg > 0 && s[beg - 1] != '\n'; beg--)
		;
	for (i = beg, j = 0; i < end && j + 1 < blen; i++)
		buf[j++] = s[i] >= ' ' && s[i] < 127 ? s[i] : '?';
	buf[j] = 0;
}

int pn_run(struct pn_run *r)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, status = 0, over = 0, exited = 0, open_fds, ret;
	char tail[TAIL], line[200];
	size_t elen = 0;
	double deadline = pn_now() + r->timeout;
	char **env;
	pid_t pid, self = getpid();
	cpu_set_t cpus;
	int c;

	r->out = NULL;
	r->out_len = 0;
	r->status = -1;
	r->why[0] = 0;
	if (r->pass_fd < 0 || (r->pass_fd > 0 && r->pass_fd < 3))
		return pn_err(-EINVAL, "descriptor %d cannot be passed as 3", r->pass_fd);
	if (r->cpus) {
		CPU_ZERO(&cpus);
		for (c = 0; c < CPU_SETSIZE && (size_t)c / 8 < r->cpus_len; c++)
			if (r->cpus[c / 8] & (1u << (c % 8)))
				CPU_SET(c, &cpus);
		if (!CPU_COUNT(&cpus))
			return pn_err(-EINVAL, "no CPU to run %s on", r->argv[0]);
	}
	env = make_env(r->env);
	if (!env)
		return pn_err(-ENOMEM, "out of memory for %s's environment", r->argv[0]);
	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
		ret = pn_err(-errno, "pipe: %s", strerror(errno));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		ret = pn_err(-errno, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0)
		child(r, env, po[1], pe[1], self, r->cpus ? &cpus : NULL);
	free(env);
	env = NULL;
	close(po[1]);
	close(pe[1]);
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	fcntl(pe[0], F_SETFL, O_NONBLOCK);
	open_fds = 2;
	/* until it ended and said all, or what it left running keeps its pipes */
	while ((open_fds || !exited) && !over) {
		struct pollfd p[2] = { { .fd = po[0], .events = POLLIN },
				       { .fd = pe[0], .events = POLLIN } };
		double left = deadline - pn_now();
		int k, ms = left > 0 ? (int)(left * 1000) + 1 : 0;

		if (left <= 0)
			break;
		k = poll(p, 2, ms > 50 ? 50 : ms);
		if (k < 0 && errno != EINTR)
			break;
		if (p[0].fd >= 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    !drain(po[0], &r->out, &r->out_len, r->out_max, &over)) {
			close(po[0]);
			po[0] = -1;
			open_fds--;
		}
		if (!over && p[1].fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    !keep_tail(pe[0], tail, &elen)) {
			close(pe[0]);
			pe[0] = -1;
			open_fds--;
		}
		if (exited && k == 0)
			break;	/* it ended; a process of its own holds the pipes */
		if (!exited && waitpid(pid, &status, WNOHANG) == pid)
			exited = 1;
	}
	if (!exited) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	last_line(tail, elen, line, sizeof(line));
	r->status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	if (over == 1)
		snprintf(r->why, sizeof(r->why), "printed more than %zu bytes: killed", r->out_max);
	else if (!exited)
		snprintf(r->why, sizeof(r->why), "did not end in %g s: killed%s%s", r->timeout,
			 line[0] ? "; it said: " : "", line);
	else if (WIFSIGNALED(status))
		snprintf(r->why, sizeof(r->why), "died of signal %d (%s)%s%s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)), line[0] ? "; it said: " : "", line);
	else if (WEXITSTATUS(status) == 127 && !line[0])
		snprintf(r->why, sizeof(r->why), "could not be started (exit 127)");
	else if (WEXITSTATUS(status))
		snprintf(r->why, sizeof(r->why), "exit %d%s%s", WEXITSTATUS(status),
			 line[0] ? ": " : "", line);
	ret = over == 2 ? pn_err(-ENOMEM, "out of memory for %s's output", r->argv[0]) :
	      r->why[0] ? 1 : 0;
	if (!r->out && ret >= 0) {
		r->out = calloc(1, 1);
		if (!r->out)
			ret = pn_err(-ENOMEM, "out of memory for %s's output", r->argv[0]);
	}
	if (ret < 0) {
		free(r->out);
		r->out = NULL;
		r->out_len = 0;
	}
	if (po[0] >= 0)
		close(po[0]);
	if (pe[0] >= 0)
		close(pe[0]);
	return ret;
fail:
	free(env);
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return ret;
}

void pn_run_release(struct pn_run *r)
{
	free(r->out);
	r->out = NULL;
	r->out_len = 0;
}
