/* SPDX-License-Identifier: MIT */
/*
 * base/run.h: another program run to its end, bounded: its output, its
 * environment, the reason of a failure, the deadline, the output cap, and
 * no descriptor of ours in it.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/run.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Run sh -c script with env; returns pn_run's value, r filled. */
static int sh(struct pn_run *r, const char *script, const char *const *env, double timeout,
	      size_t out_max)
{
	static const char *argv[4];

	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = script;
	argv[3] = NULL;
	*r = (struct pn_run){ .argv = argv, .env = env, .timeout = timeout, .out_max = out_max };
	return pn_run(r);
}

TEST(output_and_env)
{
	const char *env[] = { "PN_T_RUN=pinned", "HOME=/nowhere", NULL };
	struct pn_run r;

	CHECK_EQ_INT(sh(&r, "echo hello; echo \"$PN_T_RUN $HOME\"; echo noise >&2", env, 5,
			4096), 0);
	CHECK_STR(r.out, "hello\npinned /nowhere\n");
	CHECK_EQ_INT((int)r.out_len, 22);
	CHECK_EQ_INT(r.status, 0);
	CHECK_STR(r.why, "");
	pn_run_release(&r);
	CHECK_EQ_INT(sh(&r, "true", NULL, 5, 4096), 0);
	CHECK_STR(r.out, "");
	pn_run_release(&r);
}

TEST(failures_say_why)
{
	struct pn_run r;

	CHECK_EQ_INT(sh(&r, "echo out; printf 'first\\nlast words\\n\\n' >&2; exit 3", NULL, 5,
			4096), 1);
	CHECK_STR(r.why, "exit 3: last words");
	CHECK_EQ_INT(r.status, 3);
	CHECK_STR(r.out, "out\n");
	pn_run_release(&r);
	CHECK_EQ_INT(sh(&r, "kill -SEGV $$", NULL, 5, 4096), 1);
	CHECK(strstr(r.why, "died of signal 11") == r.why);
	CHECK_EQ_INT(r.status, 128 + 11);
	pn_run_release(&r);
	{
		const char *argv[] = { "/nonexistent/penny", NULL };

		r = (struct pn_run){ .argv = argv, .timeout = 5, .out_max = 10 };
		CHECK_EQ_INT(pn_run(&r), 1);
		CHECK_STR(r.why, "could not be started (exit 127)");
		pn_run_release(&r);
	}
	/* control characters of its stderr do not reach a terminal */
	CHECK_EQ_INT(sh(&r, "printf 'a\\033[2Jb' >&2; exit 1", NULL, 5, 4096), 1);
	CHECK_STR(r.why, "exit 1: a?[2Jb");
	pn_run_release(&r);
}

TEST(deadline)
{
	struct pn_run r;
	double t0 = pn_now();

	/* a hang is killed at the deadline */
	CHECK_EQ_INT(sh(&r, "echo started >&2; exec sleep 30", NULL, 0.3, 4096), 1);
	CHECK(pn_now() - t0 < 5);
	CHECK_STR(r.why, "did not end in 0.3 s: killed; it said: started");
	CHECK_EQ_INT(r.status, 128 + 9);
	pn_run_release(&r);
	/* it ended; what it left running holds the pipes: not waited for */
	t0 = pn_now();
	CHECK_EQ_INT(sh(&r, "sleep 6 & echo done", NULL, 10, 4096), 0);
	CHECK(pn_now() - t0 < 4);
	CHECK_STR(r.out, "done\n");
	pn_run_release(&r);
}

TEST(output_bounded)
{
	struct pn_run r;
	double t0 = pn_now();

	CHECK_EQ_INT(sh(&r, "exec cat /dev/zero", NULL, 10, 1000), 1);
	CHECK(pn_now() - t0 < 5);
	CHECK_STR(r.why, "printed more than 1000 bytes: killed");
	CHECK_EQ_INT((int)r.out_len, 1000);
	pn_run_release(&r);
	/* stderr without end: its last line is kept */
	CHECK_EQ_INT(sh(&r, "i=0; while [ $i -lt 3000 ]; do echo line $i >&2; i=$((i+1)); "
			"done; exit 2", NULL, 10, 1000), 1);
	CHECK_STR(r.why, "exit 2: line 2999");
	pn_run_release(&r);
}

TEST(no_descriptor_of_ours)
{
	struct pn_run r;
	char script[128];
	int fd = open("/dev/null", O_RDONLY);	/* without O_CLOEXEC */

	CHECK(fd > 2);
	snprintf(script, sizeof(script), "if [ -e /proc/self/fd/%d ]; then echo leaked; fi; "
		 "read x; echo \"stdin '$x'\"", fd);
	CHECK_EQ_INT(sh(&r, script, NULL, 5, 4096), 0);
	CHECK_STR(r.out, "stdin ''\n");
	pn_run_release(&r);
	close(fd);
}

/* What the child wrote to its descriptor 3, passed as descriptor num. */
static int through(int num, char *buf, size_t len)
{
	static const char *argv[] = { "/bin/sh", "-c", "echo through >&3; "
				      "if [ -e /proc/self/fd/4 ]; then echo leaked; fi", NULL };
	struct pn_run r = { .argv = argv, .timeout = 5, .out_max = 4096, .pass_fd = num };
	int p[2], saved = fcntl(num, F_DUPFD_CLOEXEC, 20), ret;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	if (p[0] == num) {	/* the read end elsewhere */
		p[0] = fcntl(num, F_DUPFD_CLOEXEC, 30);
		close(num);
	}
	if (p[0] < 0 || dup3(p[1], num, O_CLOEXEC) != num)
		return -1;
	close(p[1]);
	ret = pn_run(&r);
	close(num);
	if (saved >= 0) {
		dup3(saved, num, O_CLOEXEC);
		close(saved);
	}
	n = read(p[0], buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
	close(p[0]);
	if (!ret && r.out_len)
		ret = 1;	/* "leaked" */
	pn_run_release(&r);
	return ret;
}

/* The descriptor it passes is the child's 3 (also 3 itself, close-on-exec), no other. */
TEST(passes_one_descriptor)
{
	struct pn_run r = { 0 };
	char buf[64];

	CHECK_EQ_INT(through(10, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "through\n");
	CHECK_EQ_INT(through(3, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "through\n");
	r.pass_fd = 2;
	CHECK_EQ_INT(pn_run(&r), -EINVAL);
}

/* "NAME" without '=' removes NAME; a prefix of another name removes nothing else. */
TEST(env_removed)
{
	const char *env[] = { "PN_T_GONE", "PN_T_NEW=1", NULL };
	struct pn_run r;

	setenv("PN_T_GONE", "there", 1);
	setenv("PN_T_GONE_NOT", "kept", 1);
	CHECK_EQ_INT(sh(&r, "echo \"${PN_T_GONE-unset} $PN_T_GONE_NOT $PN_T_NEW\"", env, 5, 4096),
		     0);
	CHECK_STR(r.out, "unset kept 1\n");
	pn_run_release(&r);
	unsetenv("PN_T_GONE");
	unsetenv("PN_T_GONE_NOT");
}

/* The child runs on the CPUs it is given, whatever the caller's are. */
TEST(cpus)
{
	unsigned char one[128] = { 0 }, none[128] = { 0 };
	const char *argv[] = { "/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status", NULL };
	struct pn_run r;

	one[0] = 1;	/* CPU 0 */
	r = (struct pn_run){ .argv = argv, .timeout = 5, .out_max = 4096, .cpus = one,
			     .cpus_len = sizeof(one) };
	CHECK_EQ_INT(pn_run(&r), 0);
	CHECK(r.out && strstr(r.out, ":\t0\n"));
	pn_run_release(&r);
	r = (struct pn_run){ .argv = argv, .timeout = 5, .out_max = 4096, .cpus = none,
			     .cpus_len = sizeof(none) };
	CHECK_EQ_INT(pn_run(&r), -EINVAL);
}

int main(void)
{
	RUN(env_removed);
	RUN(cpus);
	RUN(output_and_env);
	RUN(failures_say_why);
	RUN(deadline);
	RUN(output_bounded);
	RUN(no_descriptor_of_ours);
	RUN(passes_one_descriptor);
	return unit_done();
}
