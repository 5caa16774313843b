/* SPDX-License-Identifier: MIT */
/*
 * The sampler thread (run under `make tsan` too): snapshots arrive at the
 * interval, an interval change takes effect, and a read that blocks (a
 * counter file whose read hangs, as a wedged driver's can) leaves the caller
 * free: busy() names the port, take() returns nothing new, stop() gives up
 * after its timeout.
 */
#include "top/sampler.h"
#include "t_counters_fake.h"
#include "unit.h"

#include <dlfcn.h>
#include <stdatomic.h>

#include "node/counters.h"
#include "base/log.h"
#include "node/sysfs.h"
#include "base/util.h"

#include <math.h>
#include <poll.h>
#include <pthread.h>

/* Wait until the sampler's fd polls readable; returns 1 or 0 on timeout. */
static int wait_fd(struct pn_counters_sampler *s, int ms)
{
	struct pollfd pfd = { .fd = pn_sampler_fd(s), .events = POLLIN };

	return poll(&pfd, 1, ms) == 1;
}

TEST(snapshots_at_the_interval)
{
	struct pn_counters_set set, view;
	struct pn_counters_sampler *s;
	struct pn_counters_cfg cfg;
	double t0, dt, max_tx = 0;
	int got = 0, i, nan_tx = 0;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	fake_ib_port("mlx5_1", 1);
	pn_counters_cfg_init(&cfg);
	pn_counters_set_init(&set, &cfg);
	memset(&view, 0, sizeof(view));
	CHECK_EQ_INT(pn_sampler_start(&s, &set, 0.05, 0.02), 0);
	CHECK(set.ports == NULL); /* taken over */
	t0 = pn_now();
	for (i = 0; i < 200 && got < 4; i++) {
		int r;

		if (!wait_fd(s, 1000))
			break;
		r = pn_sampler_take(s, &view);
		CHECK(r >= 0);
		if (r == 1) {
			got++;
			if (got > 1 && !isfinite(view.ports[1].tx_Bps))
				nan_tx++;
			if (got > 1 && view.ports[1].tx_Bps > max_tx)
				max_tx = view.ports[1].tx_Bps;
			fake_ctr("mlx5_1", 1, "port_xmit_data", (uint64_t)got * 1000);
		}
	}
	dt = pn_now() - t0;
	CHECK_EQ_INT(got, 4);
	CHECK(view.seq >= 4);
	CHECK_EQ_INT(view.n, 2);
	CHECK(view.ports[0].io == NULL);
	/* baseline, +20 ms, then every 50 ms */
	CHECK(dt > 0.1 && dt < 2.0);
	/* each write lands between two samples, unless this thread was slow */
	CHECK_EQ_INT(nan_tx, 0);
	CHECK(max_tx > 0);
	CHECK(fabs(view.interval - 0.05) < 1e-9);
	/* nothing new right after a take */
	CHECK_EQ_INT(pn_sampler_take(s, &view), 0);

	/* a longer interval: no snapshot for a while */
	pn_sampler_set_interval(s, 0.5);
	CHECK(fabs(pn_sampler_interval(s) - 0.5) < 1e-9);
	while (wait_fd(s, 0) && pn_sampler_take(s, &view) == 1)
		; /* one may have been on its way */
	t0 = pn_now();
	CHECK(wait_fd(s, 2000));
	dt = pn_now() - t0;
	CHECK(dt > 0.2);
	CHECK_EQ_INT(pn_sampler_take(s, &view), 1);
	CHECK(fabs(view.interval - 0.5) < 1e-9);
	/* a shorter one wakes the sleeping thread at once */
	t0 = pn_now();
	pn_sampler_set_interval(s, 0.01);
	CHECK(wait_fd(s, 2000));
	CHECK(pn_now() - t0 < 0.4);
	CHECK_EQ_INT(pn_sampler_stop(s, 5.0), 0);
	pn_counters_set_release(&view);
}

TEST(a_detail_port_is_read_at_once_and_in_full)
{
	struct pn_counters_set set, view;
	struct pn_counters_sampler *s;
	struct pn_counters_cfg cfg;
	const struct pn_counters_port *p;
	double t0;
	int i, other = -1;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	pn_counters_cfg_init(&cfg);
	cfg.brief = 1;
	pn_counters_set_init(&set, &cfg);
	memset(&view, 0, sizeof(view));
	CHECK_EQ_INT(pn_sampler_start(&s, &set, 30.0, 0.05), 0);
	CHECK(wait_fd(s, 3000));
	CHECK_EQ_INT(pn_sampler_take(s, &view), 1);
	p = &view.ports[0];
	for (i = 0; i < p->nctr; i++)
		if (!strcmp(p->ctr[i].name, "np_cnp_sent"))
			other = i;
	CHECK(other >= 0 && !(p->ctr[other].flags & PN_CF_VALID));
	CHECK(wait_fd(s, 3000)); /* the short first interval */
	pn_sampler_take(s, &view);
	/* the next sample is 30 s away: a detail port asks for one now */
	t0 = pn_now();
	pn_sampler_set_detail(s, "mlx5_0/1");
	CHECK(wait_fd(s, 3000));
	CHECK(pn_now() - t0 < 2.0);
	CHECK_EQ_INT(pn_sampler_take(s, &view), 1);
	p = &view.ports[0];
	CHECK(other >= 0 && (p->ctr[other].flags & PN_CF_VALID));
	pn_sampler_set_detail(s, NULL);
	CHECK_EQ_INT(pn_sampler_stop(s, 5.0), 0);
	pn_counters_set_release(&view);
}

/*
 * A read that blocks.  sysfs attributes are regular files and the engine
 * opens nothing else (a FIFO in a tree is refused without reading it), so
 * the hang is made here: this pread, which the engine's calls reach (the
 * test program's definition comes first), waits while reads of blocked_path
 * are blocked; each release lets one waiting read fail with EIO (it came
 * back, with an error), and unblocking lets them all through.
 */
static char blocked_path[600];
static atomic_int blocking, releases;

static int blocked_fd(int fd)
{
	struct stat a, b;

	return !fstat(fd, &a) && !stat(blocked_path, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	ssize_t (*real)(int, void *, size_t, off_t);

	*(void **)&real = dlsym(RTLD_NEXT, "pread");
	while (atomic_load(&blocking) && blocked_fd(fd)) {
		int r = atomic_load(&releases);

		if (r > 0 && atomic_compare_exchange_strong(&releases, &r, r - 1)) {
			errno = EIO;
			return -1;
		}
		usleep(1000);
	}
	return real(fd, buf, n, off);
}

struct opener {
	int delay_ms;
};

/* After a delay, the blocked read comes back (with an error). */
static void *unblock(void *arg)
{
	struct opener *o = arg;

	usleep((useconds_t)o->delay_ms * 1000);
	atomic_fetch_add(&releases, 1);
	return NULL;
}

TEST(a_blocked_read_does_not_block_the_caller)
{
	struct pn_counters_set set, view;
	struct pn_counters_sampler *s;
	struct pn_counters_cfg cfg;
	struct opener o;
	pthread_t th;
	char what[80];
	double secs = 0, t0;
	int busy;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	fake_ib_port("mlx5_3", 1);
	snprintf(blocked_path, sizeof(blocked_path),
		 "%s/sys/class/infiniband/mlx5_3/ports/1/counters/port_xmit_data", fake_root);
	atomic_store(&releases, 0);
	atomic_store(&blocking, 1);
	pn_counters_cfg_init(&cfg);
	pn_counters_set_init(&set, &cfg);
	memset(&view, 0, sizeof(view));
	CHECK_EQ_INT(pn_sampler_start(&s, &set, 0.05, 0), 0);
	usleep(300 * 1000);
	busy = pn_sampler_busy(s, what, sizeof(what), &secs);
	CHECK_EQ_INT(busy, 1);
	CHECK_STR(what, "mlx5_3/1");
	CHECK(secs > 0.15);
	CHECK_EQ_INT(pn_sampler_take(s, &view), 0); /* no sample yet, no wait */
	/* the read comes back: the sample completes, with that counter n/a */
	o.delay_ms = 0;
	pthread_create(&th, NULL, unblock, &o);
	CHECK(wait_fd(s, 3000));
	CHECK_EQ_INT(pn_sampler_take(s, &view), 1);
	pthread_join(th, NULL);
	CHECK_EQ_INT(view.n, 2);
	CHECK_EQ_INT(view.ports[1].nunreadable, 1);
	/* it blocks again on the next sample; stop gives up after its timeout */
	usleep(200 * 1000);
	CHECK_EQ_INT(pn_sampler_busy(s, what, sizeof(what), NULL), 1);
	t0 = pn_now();
	CHECK_EQ_INT(pn_sampler_stop(s, 0.2), -ETIMEDOUT);
	CHECK(pn_now() - t0 < 1.0);
	CHECK(strstr(pn_errmsg(-ETIMEDOUT), "mlx5_3/1") != NULL);
	/* let the abandoned thread finish its read and leave */
	atomic_store(&blocking, 0);
	usleep(100 * 1000);
	pn_counters_set_release(&view);
}

/*
 * Batch output (--json, --record): a caller slower than the interval gets
 * every sample, each over its own elapsed time; it lost the ones in between
 * (a recording's seq 23 missing on a loaded machine, t0506), and with them
 * their bytes.  The screen keeps the newest.
 */
static void takes(struct pn_counters_sampler *s, struct pn_counters_set *view, int n,
		  uint64_t *seqs, int us)
{
	int i, got = 0;

	for (i = 0; i < 400 && got < n; i++) {
		if (!wait_fd(s, 1000))
			break;
		if (pn_sampler_take(s, view) == 1)
			seqs[got++] = view->seq;
		usleep((useconds_t)us); /* slower than the 2 ms interval */
	}
}

TEST(a_slow_batch_caller_gets_every_sample)
{
	struct pn_counters_set set, view;
	struct pn_counters_sampler *s;
	struct pn_counters_cfg cfg;
	uint64_t seqs[8] = { 0 };
	double bytes = 0;
	int i, skipped = 0;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	pn_counters_cfg_init(&cfg);
	pn_counters_set_init(&set, &cfg);
	memset(&view, 0, sizeof(view));
	CHECK_EQ_INT(pn_sampler_start(&s, &set, 0.002, 0), 0);
	pn_sampler_set_lossless(s, 1);
	takes(s, &view, 8, seqs, 20000);
	for (i = 0; i < 8; i++)
		CHECK_EQ_INT(seqs[i], i + 1);
	/* the rates over the elapsed times add up to what the counter moved */
	fake_ctr("mlx5_0", 1, "port_xmit_data", 1000000);
	takes(s, &view, 1, seqs, 20000);
	bytes += view.ports[0].tx_Bps * view.ports[0].elapsed;
	takes(s, &view, 1, seqs, 20000);
	bytes += view.ports[0].tx_Bps * view.ports[0].elapsed;
	CHECK(fabs(bytes - 4e6) < 1);
	/* the screen's way: the newest, samples in between skipped (100 ms
	 * between takes: 50 intervals, a loaded machine's sampler runs twice) */
	pn_sampler_set_lossless(s, 0);
	takes(s, &view, 4, seqs, 100000);
	for (i = 1; i < 4; i++)
		skipped += seqs[i] > seqs[i - 1] + 1;
	CHECK(skipped > 0);
	CHECK_EQ_INT(pn_sampler_stop(s, 5), 0);
	pn_counters_set_release(&view);
}

TEST(start_rejects_a_bad_interval)
{
	struct pn_counters_set set;
	struct pn_counters_sampler *s = (void *)1;

	pn_counters_set_init(&set, NULL);
	CHECK_EQ_INT(pn_sampler_start(&s, &set, 0, 0), -EINVAL);
	CHECK(s == NULL);
	pn_counters_set_release(&set);
	CHECK_EQ_INT(pn_sampler_stop(NULL, 0), 0);
}

int main(void)
{
	if (fake_setup() || pn_sysfs_set_root(fake_root)) {
		printf("not ok 1 - cannot set up a fake sysfs tree\n");
		return 1;
	}
	RUN(snapshots_at_the_interval);
	RUN(start_rejects_a_bad_interval);
	RUN(a_slow_batch_caller_gets_every_sample);
	RUN(a_detail_port_is_read_at_once_and_in_full);
	/* last: it leaves an abandoned thread behind, which may still be
	 * finishing its sample (so the sysfs root is not reset here) */
	RUN(a_blocked_read_does_not_block_the_caller);
	fake_teardown();
	return unit_done();
}
