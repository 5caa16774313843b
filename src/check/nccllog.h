/* SPDX-License-Identifier: MIT */
/*
 * The path NCCL chose, from its NCCL_DEBUG=INFO log: every channel's
 * connection line
 *
 *   host:pid:tid [dev] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
 *   host:pid:tid [dev] NCCL INFO Channel 02/1 : 3[3] -> 11[3] [send] via NET/IB/3/GDRDMA
 *   host:pid:tid [dev] NCCL INFO Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA
 *
 * (the "/conn" part and the brackets' device index or bus id vary with
 * NCCL's version, 2.7 to 2.28), with the NICs of each host's
 * "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ..." line to name the NIC
 * a NET path's index means, and the "NCCL version 2.21.5+cuda12.4" line.
 * A pure parser: text in, a table out; the judgement is the caller's.
 * Bounded: at most PN_NCCL_MAX_PATHS paths and PN_NCCL_MAX_NICS NICs are
 * kept, the rest counted; lines longer than PN_NCCL_LINE_MAX are skipped.
 */
#ifndef PENNY_NCCLLOG_H
#define PENNY_NCCLLOG_H

#include <stddef.h>

#define PN_NCCL_MAX_PATHS 65536
#define PN_NCCL_MAX_NICS 256
#define PN_NCCL_LINE_MAX 4096

enum pn_nccl_transport {
	PN_NT_OTHER,	/* what this parser does not know (NVLS, COLLNET, a new one) */
	PN_NT_P2P,	/* P2P/CUMEM, P2P/IPC, P2P/direct pointer (with /read) */
	PN_NT_SHM,	/* SHM/direct/direct, SHM/CE */
	PN_NT_NET,	/* NET/<plugin>/<nic>[/GDRDMA] */
};

struct pn_nccl_path {
	char host[64];		/* the line's host ("" when the prefix has none) */
	int channel, conn;	/* "Channel 02/1": 2, 1 (conn 0 without "/N") */
	int from, to;		/* ranks */
	/* in the brackets: the NVML device index (2.19 on; the node's GPU in PCI
	 * order, whatever CUDA_VISIBLE_DEVICES says: on 4 x H200 a rank with
	 * CUDA_VISIBLE_DEVICES=2,3 and cudaDev 1 logged "3[3]", nvmlDev 3) or
	 * the bus id (before); the "[1]" after the pid is the CUDA device */
	char from_dev[16], to_dev[16];
	char dir[8];		/* "send", "receive" or "" */
	enum pn_nccl_transport transport;
	char via[64];		/* all after "via ": "NET/IB/3/GDRDMA" */
	char net[24];		/* NET: the plugin ("IB", "Socket", "IBext_v8"), else "" */
	int nic;		/* NET: the NIC index, -1 otherwise */
	char nic_name[40];	/* NET: "mlx5_3:1" from the host's Using line, "" unknown */
	int gdr;		/* NET: GPUDirect RDMA (GDRDMA) */
	int read;		/* P2P: the read protocol ("/read") */
};

struct pn_nccl_nic {
	char host[64];
	char net[24];		/* "IB", "Socket" (the line's "NET/<net> : Using") */
	int index;
	char name[40];		/* "mlx5_0:1", "eth0" */
	char link[16];		/* "IB", "RoCE", "" */
};

struct pn_nccl_log {
	char version[32];	/* "2.21.5+cuda12.4", "" none seen */
	int npaths, nnics;
	struct pn_nccl_path *paths;
	struct pn_nccl_nic *nics;
	long lines;		/* lines read */
	long dropped;		/* paths or NICs past the bounds, lines too long */
};

/*
 * One line (n bytes, no newline needed): 1 and *p filled when it is a
 * channel's connection line, 0 when not (anything else NCCL prints).
 */
int pn_nccl_parse_path(const char *line, size_t n, struct pn_nccl_path *p);
/*
 * A "NET/<net> : Using [0]name:port/LL [1]..." line: how many NICs it
 * names into nics[0, max), 0 when it is not one.
 */
int pn_nccl_parse_using(const char *line, size_t n, struct pn_nccl_nic *nics, int max);

/* The whole log buf[0, len) into l (zeroed by the caller): 0 or -ENOMEM. */
int pn_nccl_log_parse(struct pn_nccl_log *l, const char *buf, size_t len);
void pn_nccl_log_release(struct pn_nccl_log *l);

/* "P2P", "SHM", "NET", "other" */
const char *pn_nccl_transport_name(enum pn_nccl_transport t);

#endif
