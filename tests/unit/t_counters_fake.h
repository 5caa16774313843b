/* SPDX-License-Identifier: MIT */
/*
 * A fake sysfs tree for the counter tests: RDMA ports with counters/ and
 * hw_counters/, rxe-style ports with only hw_counters/ and a parent netdev,
 * plain netdevs.  Files are rewritten in place (same inode), as sysfs values
 * change under a held descriptor.
 */
#ifndef T_COUNTERS_FAKE_H
#define T_COUNTERS_FAKE_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fake_root[256];

static inline void fake_mkdirs(const char *path)
{
	char tmp[1024], *p;

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			mkdir(tmp, 0755);
			*p = '/';
		}
	}
	mkdir(tmp, 0755);
}

/*
 * Write "<root>/<rel>" in place (parents created): one pwrite at offset 0,
 * then cut to length.  Counters are written at a fixed width, so a reader
 * on another thread sees the old value or the new one, never an empty file.
 */
static inline void fake_write(const char *rel, const char *fmt, ...)
{
	char path[1024], dir[1024], buf[256], *slash;
	va_list ap;
	int fd, n;

	snprintf(path, sizeof(path), "%s/%s", fake_root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*slash = 0;
	fake_mkdirs(dir);
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	buf[n++] = '\n';
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd < 0 || pwrite(fd, buf, (size_t)n, 0) != n || ftruncate(fd, n))
		printf("# cannot write %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static inline void fake_ctr(const char *dev, int port, const char *name, uint64_t v)
{
	char rel[512];

	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%d/counters/%s", dev, port, name);
	fake_write(rel, "%20llu", (unsigned long long)v);
}

static inline void fake_hw(const char *dev, int port, const char *name, uint64_t v)
{
	char rel[512];

	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%d/hw_counters/%s", dev, port,
		 name);
	fake_write(rel, "%20llu", (unsigned long long)v);
}

static inline void fake_net(const char *ifname, const char *name, uint64_t v)
{
	char rel[512];

	snprintf(rel, sizeof(rel), "sys/class/net/%s/statistics/%s", ifname, name);
	fake_write(rel, "%20llu", (unsigned long long)v);
}

static inline void fake_port_attr(const char *dev, int port, const char *attr, const char *v)
{
	char rel[512];

	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%d/%s", dev, port, attr);
	fake_write(rel, "%s", v);
}

/* An InfiniBand port: ACTIVE, 100 Gb/s, IB counters at zero, two hw counters. */
static inline void fake_ib_port(const char *dev, int port)
{
	static const char *names[] = { "port_xmit_data", "port_rcv_data", "port_xmit_packets",
				       "port_rcv_packets", "symbol_error", "link_downed",
				       "port_rcv_errors", "port_xmit_discards", "VL15_dropped" };
	size_t i;

	fake_port_attr(dev, port, "state", "4: ACTIVE");
	fake_port_attr(dev, port, "phys_state", "5: LinkUp");
	fake_port_attr(dev, port, "rate", "100 Gb/sec (4X EDR)");
	fake_port_attr(dev, port, "link_layer", "InfiniBand");
	fake_port_attr(dev, port, "lid", "0x10");
	fake_port_attr(dev, port, "gids/0", "fe80:0000:0000:0000:0000:0000:0000:0001");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		fake_ctr(dev, port, names[i], 0);
	fake_hw(dev, port, "out_of_buffer", 0);
	fake_hw(dev, port, "packet_seq_err", 0);
	fake_hw(dev, port, "req_cqe_flush_error", 0);
	fake_hw(dev, port, "np_cnp_sent", 0);
	fake_hw(dev, port, "lifespan", 10);
}

/* A soft-RoCE port: hw_counters only, bytes from the parent netdev. */
static inline void fake_rxe_port(const char *dev, const char *netdev)
{
	char rel[512];

	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/parent", dev);
	fake_write(rel, "%s", netdev);
	fake_port_attr(dev, 1, "state", "4: ACTIVE");
	fake_port_attr(dev, 1, "phys_state", "5: LinkUp");
	fake_port_attr(dev, 1, "rate", "10 Gb/sec (1X QDR)");
	fake_port_attr(dev, 1, "link_layer", "Ethernet");
	fake_hw(dev, 1, "sent_pkts", 0);
	fake_hw(dev, 1, "rcvd_pkts", 0);
	fake_hw(dev, 1, "retry_exceeded_err", 0);
	fake_net(netdev, "rx_bytes", 0);
	fake_net(netdev, "tx_bytes", 0);
	fake_net(netdev, "rx_packets", 0);
	fake_net(netdev, "tx_packets", 0);
	fake_net(netdev, "rx_errors", 0);
	fake_net(netdev, "tx_errors", 0);
	fake_net(netdev, "rx_dropped", 0);
	fake_net(netdev, "tx_dropped", 0);
	snprintf(rel, sizeof(rel), "sys/class/net/%s/operstate", netdev);
	fake_write(rel, "up");
}

static inline void fake_rm(const char *rel)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", fake_root, rel);
	if (system(cmd)) {
		/* reported by the checks that follow */
	}
}

static inline int fake_setup(void)
{
	snprintf(fake_root, sizeof(fake_root), "%s/penny-ctr.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(fake_root))
		return -1;
	return 0;
}

static inline void fake_reset(void)
{
	fake_rm("sys");
}

static inline void fake_teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_root);
	if (system(cmd)) {
		/* left behind in TMPDIR */
	}
}

#endif
