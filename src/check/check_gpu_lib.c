/* SPDX-License-Identifier: MIT */
/*
 * What the GPU checks (check_gpu.c, check_ar.c) share, declared in
 * check_gpu_lib.h: the rates the topology promises and the child process every
 * GPU measurement runs in.  Apart from the checks so that the unit test
 * links it alone.
 */
#define _GNU_SOURCE
#include "check/check_gpu_lib.h"

#include "base/log.h"
#include "base/util.h"
#include "node/pcie.h"
#include "node/topo.h"
#include "plan/plan.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

/* ------------------------------------------------------------ the rates */

double pn_checkgpu_path_gbs(const struct pn_pcie_path *p, char *src, size_t len)
{
	int i, w = -1;

	for (i = 0; i < p->nlinks; i++)
		if (p->link[i].max_gbs > 0 && (w < 0 || p->link[i].max_gbs <= p->link[w].max_gbs))
			w = i; /* ties: nearest the device, which is last */
	if (w < 0) {
		snprintf(src, len, "PCIe rate unknown");
		return 0;
	}
	snprintf(src, len, "Gen%d x%d = %.3g GB/s%s%s%s", p->link[w].max_gen, p->link[w].max_width,
		 p->link[w].max_gbs, w < p->nlinks - 1 ? " (uplink " : "",
		 w < p->nlinks - 1 ? p->link[w].addr : "", w < p->nlinks - 1 ? ")" : "");
	return p->link[w].max_gbs;
}

double pn_checkgpu_pair_gbs(int cls, int nv, double pcie, char *src, size_t len)
{
	char name[16];

	pn_path_name(cls, nv, name, sizeof(name));
	if (cls == PN_PATH_NV && nv > 0) {
		snprintf(src, len, "%s x %.2f GB/s = %.4g GB/s", name, PN_PLAN_NVLINK_GBS,
			 nv * PN_PLAN_NVLINK_GBS);
		return nv * PN_PLAN_NVLINK_GBS;
	}
	if (!(pcie > 0)) {
		snprintf(src, len, "%s: PCIe rate unknown", name);
		return 0;
	}
	if (cls == PN_PATH_SYS && PN_PLAN_SYS_GBS < pcie) {
		snprintf(src, len, "%s: socket link %.3g GB/s", name, PN_PLAN_SYS_GBS);
		return PN_PLAN_SYS_GBS;
	}
	snprintf(src, len, "%s: PCIe %.3g GB/s", name, pcie);
	return pcie;
}

int pn_checkgpu_predict(const struct pn_topo *t, double pcie, double *busbw, char *src,
			size_t len)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_opts o = { .pcie_gbs = pcie };
	int ret;

	*busbw = 0;
	if (t->ngpus < 2)
		return pn_err(-EINVAL, "ring-plan predicts nothing for %d GPU%s", t->ngpus,
			      t->ngpus == 1 ? "" : "s");
	pn_plan_model_init(&m);
	pn_plan_init(&p, &m);
	ret = pn_plan_model_add_topology(&m, t);
	if (!ret)
		ret = pn_plan_model_finish(&m);
	if (!ret)
		ret = pn_plan_build(&p, &m, &o);
	if (!ret && !(p.busbw_gbs > 0))
		ret = pn_err(-EINVAL, "ring-plan predicts no bandwidth for this topology");
	if (!ret) {
		*busbw = p.busbw_gbs;
		snprintf(src, len, "ring-plan: %d ring%s, %.4g GB/s (limit: %s)", p.nrings,
			 p.nrings == 1 ? "" : "s", p.busbw_gbs, p.bottleneck.what);
	}
	pn_plan_release(&p);
	pn_plan_model_release(&m);
	return ret;
}

static int parse_busid(const char *s, unsigned v[4])
{
	int n = -1;

	return s && strspn(s, "0123456789abcdefABCDEF:.") == strlen(s) &&
	       sscanf(s, "%x:%x:%x.%x%n", &v[0], &v[1], &v[2], &v[3], &n) == 4 &&
	       n == (int)strlen(s);
}

int pn_checkgpu_busid_eq(const char *a, const char *b)
{
	unsigned x[4], y[4];

	return parse_busid(a, x) && parse_busid(b, y) && !memcmp(x, y, sizeof(x));
}

/* ----------------------------------------------------- the child process */

struct child_shared {
	int ret;
	char msg[256];
};

/* The child's results follow the header, aligned for any type. */
#define CHILD_OUT_OFF ((sizeof(struct child_shared) + 63) & ~(size_t)63)

int pn_checkgpu_child(int (*fn)(void *arg, void *out), void *arg, void *out, size_t outlen,
		      double timeout, const char *what)
{
	size_t sz = CHILD_OUT_OFF + outlen;
	struct child_shared *sh;
	double t0 = pn_now();
	int status = 0, ret;
	pid_t pid, w, self = getpid();

	sh = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return pn_err(-ENOMEM, "%s: cannot map %zu bytes: %s", what, sz, strerror(errno));
	memset(sh, 0, sz);
	sh->ret = -EIO;
	pid = fork();
	if (pid < 0) {
		ret = pn_err(-errno, "%s: fork: %s", what, strerror(errno));
		munmap(sh, sz);
		return ret;
	}
	if (pid == 0) {
		sigset_t none;

		/* it dies with this process: the sockets of a job it holds too
		 * close with a killed rank, and the others learn it at once;
		 * and by a stop's signal, which the parent's thread takes */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != self)
			_exit(1);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		ret = fn(arg, (char *)sh + CHILD_OUT_OFF);
		if (ret)
			snprintf(sh->msg, sizeof(sh->msg), "%s", pn_errmsg(ret));
		sh->ret = ret;
		_exit(0);
	}
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (pn_now() - t0 > timeout) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			munmap(sh, sz);
			return pn_err(-ETIMEDOUT, "%s did not end in %g s (the timeout): killed", what,
				      timeout);
		}
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		ret = WIFSIGNALED(status) ? pn_err(-EIO, "%s died of signal %d (%s)", what,
						   WTERMSIG(status), strsignal(WTERMSIG(status)))
					  : pn_err(-EIO, "%s ended without its results", what);
	} else {
		ret = sh->ret;
		if (ret)
			pn_err(ret, "%s", sh->msg[0] ? sh->msg : "failed");
		else
			memcpy(out, (char *)sh + CHILD_OUT_OFF, outlen);
	}
	munmap(sh, sz);
	return ret;
}
