/* SPDX-License-Identifier: MIT */
/*
 * NCCL's NCCL_DEBUG=INFO log parser (src/check/nccllog.c): one line of
 * each transport format, the NIC lists, and the fixtures of
 * tests/fixtures/nccl-log (the formats of NCCL 2.7 to 2.28) parsed into
 * the table; hostile lines.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/file.h"
#include "check/nccllog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *top(void)
{
	const char *t = getenv("TOP");

	return t && *t ? t : ".";
}

static int line(const char *s, struct pn_nccl_path *p)
{
	return pn_nccl_parse_path(s, strlen(s), p);
}

TEST(paths)
{
	struct pn_nccl_path p;

	CHECK_EQ_INT(line("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read", &p), 1);
	CHECK_STR(p.host, "h");
	CHECK_EQ_INT(p.channel, 0);
	CHECK_EQ_INT(p.from, 0);
	CHECK_EQ_INT(p.to, 1);
	CHECK_EQ_INT(p.transport, PN_NT_P2P);
	CHECK_EQ_INT(p.read, 1);
	CHECK_EQ_INT(p.nic, -1);
	CHECK_STR(p.via, "P2P/CUMEM/read");
	CHECK_STR(p.dir, "");
	CHECK_EQ_INT(line("h:1:2 [1] NCCL INFO Channel 13/1 : 3[3] -> 11[3] [send] via "
			  "NET/IB/3/GDRDMA\r", &p), 1);
	CHECK_EQ_INT(p.channel, 13);
	CHECK_EQ_INT(p.conn, 1);
	CHECK_EQ_INT(p.transport, PN_NT_NET);
	CHECK_STR(p.net, "IB");
	CHECK_EQ_INT(p.nic, 3);
	CHECK_EQ_INT(p.gdr, 1);
	CHECK_STR(p.dir, "send");
	CHECK_STR(p.via, "NET/IB/3/GDRDMA");
	/* NCCL 2.28 on 4 x H200, CUDA_VISIBLE_DEVICES=2,3: cudaDev 1 after the
	 * pid, the NVML index 3 in the brackets (the node's GPU3) */
	CHECK_EQ_INT(line("vm:1010:1010 [1] NCCL INFO Channel 00/0 : 3[3] -> 0[0] [send] via "
			  "NET/Socket/0", &p), 1);
	CHECK_STR(p.from_dev, "3");
	CHECK_STR(p.to_dev, "0");
	CHECK_EQ_INT(line("x NCCL INFO Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5",
			  &p), 1);
	CHECK_STR(p.from_dev, "c7000");
	CHECK_STR(p.dir, "receive");
	CHECK_EQ_INT(p.gdr, 0);
	CHECK_EQ_INT(p.nic, 5);
	CHECK_STR(p.host, "");	/* "x" has no ':' */
	CHECK_EQ_INT(line("h:1:1 [0] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via SHM/direct/direct",
			  &p), 1);
	CHECK_EQ_INT(p.transport, PN_NT_SHM);
	CHECK_EQ_INT(line("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via "
			  "NET/Socket/0", &p), 1);
	CHECK_STR(p.net, "Socket");
	CHECK_EQ_INT(p.nic, 0);
	CHECK_EQ_INT(line("h:1:1 [0] NCCL INFO Channel 06/0 : 0[0] -> 1[1] via NVLS", &p), 1);
	CHECK_EQ_INT(p.transport, PN_NT_OTHER);
	CHECK_STR(pn_nccl_transport_name(p.transport), "other");
}

TEST(not_paths)
{
	static const char *const bad[] = {
		"",
		"h:1:1 [0] NCCL INFO Channel 00/02 :    0   1   2   3",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via ",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1]",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[] -> 1[1] via P2P/IPC",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0 -> 1[1] via P2P/IPC",
		"h:1:1 [0] NCCL INFO Channel 00/ : 0[0] -> 1[1] via P2P/IPC",
		"h:1:1 [0] NCCL INFO Channel 99999999999 : 0[0] -> 1[1] via P2P/IPC",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0123456789abcdef0] -> 1[1] via P2P/IPC",
		"h:1:1 [0] NCCL WARN Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
		"Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
		"h:1:1 [0] NCCL INFO Connected all rings",
	};
	struct pn_nccl_path p;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (line(bad[i], &p)) {
			printf("#   parsed: '%s'\n", bad[i]);
			CHECK(0);
		}
	/* only n bytes are looked at: the line ends before "via" */
	CHECK_EQ_INT(pn_nccl_parse_path("h NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", 34,
					&p), 0);
}

TEST(using)
{
	struct pn_nccl_nic n[4];
	const char *l = "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE "
			"[2]mlx5_2:1/IB/SHARP [3]mlx5_3:1/IB [RO]; OOB ib0:10.0.0.1<0>";

	CHECK_EQ_INT(pn_nccl_parse_using(l, strlen(l), n, 4), 4);
	CHECK_STR(n[0].name, "mlx5_0:1");
	CHECK_STR(n[0].link, "IB");
	CHECK_STR(n[1].link, "RoCE");
	CHECK_STR(n[2].link, "IB");
	CHECK_STR(n[2].net, "IB");
	CHECK_STR(n[2].host, "h");
	CHECK_EQ_INT(pn_nccl_parse_using(l, strlen(l), n, 2), 2);	/* bounded */
	l = "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.5<0> [1]eth1:fe80::1%eth1<0>";
	CHECK_EQ_INT(pn_nccl_parse_using(l, strlen(l), n, 4), 2);
	CHECK_STR(n[0].name, "eth0");
	CHECK_STR(n[1].name, "eth1");
	CHECK_STR(n[1].net, "Socket");
	l = "h:1:1 [0] NCCL INFO NET/IB : No device found.";
	CHECK_EQ_INT(pn_nccl_parse_using(l, strlen(l), n, 4), 0);
	l = "h:1:1 [0] NCCL INFO NET/IB : Using [x]mlx5_0:1/IB";
	CHECK_EQ_INT(pn_nccl_parse_using(l, strlen(l), n, 4), 0);
	l = "h:1:1 [0] NCCL INFO NET/IB : Using [0]";
	CHECK_EQ_INT(pn_nccl_parse_using(l, strlen(l), n, 4), 0);
}

static int load(const char *name, struct pn_nccl_log *l)
{
	char path[512], *buf;
	size_t len;
	int ret;

	snprintf(path, sizeof(path), "%s/tests/fixtures/nccl-log/%s", top(), name);
	memset(l, 0, sizeof(*l));
	ret = pn_file_read(path, &buf, &len);
	if (ret) {
		printf("#   %s: %d\n", path, ret);
		return ret;
	}
	ret = pn_nccl_log_parse(l, buf, len);
	free(buf);
	return ret;
}

/* "transport via nic gdr" of path i */
static void row(const struct pn_nccl_log *l, int i, char *buf, size_t len)
{
	const struct pn_nccl_path *p = &l->paths[i];

	snprintf(buf, len, "%s %d %d->%d %s %s %s %s%s", p->host, p->channel, p->from, p->to,
		 pn_nccl_transport_name(p->transport), p->via, p->nic_name[0] ? p->nic_name : "-",
		 p->gdr ? "gdr" : "nogdr", p->dir[0] ? p->dir : "");
}

static void expect(const char *file, const char *version, const char *const *rows, int n)
{
	struct pn_nccl_log l;
	char buf[256];
	int i;

	CHECK_EQ_INT(load(file, &l), 0);
	CHECK_STR(l.version, version);
	CHECK_EQ_INT(l.npaths, n);
	CHECK_EQ_INT((int)l.dropped, 0);
	for (i = 0; i < n && i < l.npaths; i++) {
		row(&l, i, buf, sizeof(buf));
		if (strcmp(buf, rows[i])) {
			printf("#   %s row %d: '%s', want '%s'\n", file, i, buf, rows[i]);
			CHECK(0);
		}
	}
	pn_nccl_log_release(&l);
}

TEST(fixtures)
{
	static const char *const v27[] = {
		"nodeA 0 0->1 P2P P2P/IPC - nogdr",
		"nodeA 0 1->2 NET NET/IB/1/GDRDMA mlx5_1:1 gdrsend",
		"nodeB 0 1->2 NET NET/IB/0/GDRDMA mlx5_0:1 gdrreceive",
		"nodeB 1 2->3 P2P P2P/direct pointer - nogdr",
	};
	static const char *const v218[] = {
		"gpu01 0 0->1 P2P P2P/IPC/read - nogdr",
		"gpu01 0 1->0 P2P P2P/IPC/read - nogdr",
		"gpu01 1 1->2 NET NET/IB/1/GDRDMA mlx5_3:1 gdrsend",
		"gpu01 1 3->0 NET NET/IB/0/GDRDMA mlx5_0:1 gdrreceive",
	};
	static const char *const v219[] = {
		"h100a 0 0->1 P2P P2P/CUMEM/read - nogdr",
		"h100a 0 1->0 P2P P2P/CUMEM/read - nogdr",
		"h100a 1 0->1 P2P P2P/CUMEM - nogdr",
		"h100a 0 2->3 SHM SHM/direct/direct - nogdr",
		"h100a 0 3->2 SHM SHM/direct/direct - nogdr",
	};
	static const char *const v221[] = {
		"cpuhost 0 1->0 NET NET/Socket/0 eth0 nogdrreceive",
		"cpuhost 1 1->0 NET NET/Socket/1 eth1 nogdrreceive",
		"cpuhost 0 0->1 NET NET/Socket/0 eth0 nogdrsend",
	};
	static const char *const v223[] = {
		"r7n3 2 12->4 NET NET/IBext_v8/2/GDRDMA mlx5_2:1 gdrreceive",
		"r7n3 2 4->20 NET NET/IBext_v8/2/GDRDMA mlx5_2:1 gdrsend",
		"r7n3 3 4->20 NET NET/IBext_v8/1 mlx5_1:1 nogdrsend",
	};
	static const char *const v228[] = {
		"b200-17 0 0->1 P2P P2P/CUMEM/read - nogdr",
		"b200-17 4 0->8 NET NET/IB/0/GDRDMA/Shared mlx5_0:1 gdrsend",
		"b200-17 5 8->0 NET NET/IB/3(0)/GDRDMA mlx5_5:1 gdrreceive",
		"b200-17 6 0->1 other NVLS - nogdr",
		"b200-17 7 0->1 P2P P2P/CUMEM - nogdr",
	};

	expect("nccl-2.7-busid.log", "2.7.8+cuda11.0", v27, 4);
	expect("nccl-2.18-ipc-read.log", "2.18.5+cuda12.2", v218, 4);
	expect("nccl-2.19-cumem-shm.log", "2.19.3+cuda12.3", v219, 5);
	expect("nccl-2.21-socket.log", "2.21.5+cuda12.4", v221, 3);
	expect("nccl-2.23-ibext-roce.log", "2.23.4+cuda12.6", v223, 3);
	expect("nccl-2.28-nvls-shared.log", "2.28.3+cuda13.0", v228, 5);
}

TEST(hostile)
{
	struct pn_nccl_log l;
	size_t n = 2 * PN_NCCL_LINE_MAX, i;
	char *buf = malloc(n + 1);

	/* one line longer than the bound with NCCL INFO in it: dropped, counted */
	memset(buf, 'a', n);
	memcpy(buf, "h NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC ", 52);
	memset(&l, 0, sizeof(l));
	CHECK_EQ_INT(pn_nccl_log_parse(&l, buf, n), 0);
	CHECK_EQ_INT(l.npaths, 0);
	CHECK_EQ_INT((int)l.dropped, 1);
	pn_nccl_log_release(&l);
	/* NUL bytes and no final newline */
	for (i = 0; i < n; i++)
		buf[i] = (char)(i % 7 ? 0 : '\n');
	memset(&l, 0, sizeof(l));
	CHECK_EQ_INT(pn_nccl_log_parse(&l, buf, n), 0);
	CHECK_EQ_INT(l.npaths, 0);
	pn_nccl_log_release(&l);
	free(buf);
	/* the same NIC printed by every rank is kept once */
	{
		const char *t = "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n"
				"h:2:2 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n"
				"g:2:2 [1] NCCL INFO NET/IB : Using [0]mlx5_9:1/IB\n";

		memset(&l, 0, sizeof(l));
		CHECK_EQ_INT(pn_nccl_log_parse(&l, t, strlen(t)), 0);
		CHECK_EQ_INT(l.nnics, 2);
		pn_nccl_log_release(&l);
	}
}

int main(void)
{
	RUN(paths);
	RUN(not_paths);
	RUN(using);
	RUN(fixtures);
	RUN(hostile);
	return unit_done();
}
