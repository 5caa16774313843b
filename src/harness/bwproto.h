/* SPDX-License-Identifier: MIT */
/*
 * penny bw's protocol: the hello each side sends before connecting, as a
 * versioned frame of base/sock.h (magic PN_BW_HELLO_MAGIC, version
 * PN_BW_PROTO_VERSION, every field little-endian), and the sockets of the
 * server and client modes.  Exchanged over the socket in server/client
 * mode, through the launcher's rendezvous otherwise.  A peer of another
 * protocol version is refused by name ("speaks bw protocol 1, this penny
 * speaks 2"), a stranger dropped.  Also the TCP path's data connection
 * under a launcher and with --loopback, bound to its run by a key
 * (pn_bw_data_accept).  Nothing here prints.  Version 3: the rows the
 * sides exchange carry their timed blocks (struct pn_bw_row).
 */
#ifndef PENNY_BWPROTO_H
#define PENNY_BWPROTO_H

#include <stddef.h>
#include <stdint.h>

#include "base/sock.h"
#include "harness/bwtest.h"
#include "transport/verbs.h"

#define PN_BW_HELLO_MAGIC 0x5042574fu /* "PBWO" */
#define PN_BW_PROTO_VERSION 3
#define PN_BW_MSG_HELLO 1
#define PN_BW_MAX_RAILS 8

/* One side's description (the decoded payload). */
struct pn_bw_hello {
	uint32_t tcp;		/* 1: TCP test */
	uint32_t nrails;
	uint32_t port_tcp;	/* launcher + TCP: the data port */
	struct pn_bw_cfg cfg;
	char host[64];
	char addr[64];		/* launcher + TCP: the data address */
	char dev[PN_BW_MAX_RAILS][40];
	double link_gbps[PN_BW_MAX_RAILS];
	struct pn_verbs_info info[PN_BW_MAX_RAILS];
	char err[160];		/* this side failed before connecting: why */
};

/* Bytes of a hello on the wire: the frame header and the payload. */
#define PN_BW_HELLO_PAYLOAD                                                                  \
	(3 * 4 + (4 + 2 + 2 + 6 * 4 + 8 + 8 + 8 * PN_BW_MAX_SIZES) + 64 + 64 +                 \
	 PN_BW_MAX_RAILS * (40 + 8 + PN_VERBS_INFO_WIRE) + 160)
#define PN_VERBS_INFO_WIRE (4 + 2 + 2 + 16 + 4 + 4 + 8 + 8 + 2 + 4 + 2 + 2 + 2 + 4 * PN_VERBS_MAX_QPS + 32)
#define PN_BW_HELLO_LEN (PN_FRAME_HDR_LEN + PN_BW_HELLO_PAYLOAD)

/* The wire bytes of h (PN_BW_HELLO_LEN of them). */
void pn_bw_hello_encode(const struct pn_bw_hello *h, uint8_t out[PN_BW_HELLO_LEN]);
/*
 * Check the first len bytes a peer sent: -EAGAIN while they can begin a
 * hello of this version, 0 when a whole one is there, else -EPROTO (not
 * penny bw) or -EPROTONOSUPPORT (a penny bw of another protocol version)
 * with a message.
 */
int pn_bw_hello_check(const void *buf, size_t len);
/*
 * Decode a hello received from a peer: len bytes at buf into *h.  0, or
 * pn_bw_hello_check's error (too short is -EPROTO here), or
 * -EPROTO with a message when it is malformed: tcp not 0 or 1, more than
 * PN_BW_MAX_RAILS rails, a string without its NUL, a port over 65535, more
 * than PN_BW_MAX_SIZES sizes.  The configuration and the connection infos
 * are checked where they are used (pn_bw_cfg_check, pn_verbs_conn_connect).
 */
int pn_bw_hello_decode(struct pn_bw_hello *h, const void *buf, size_t len);

/*
 * Send h / read and decode the peer's hello, bounded by the timeout.  A
 * peer of another protocol version: -EINVAL, "peer ADDRESS speaks bw
 * protocol 1, this penny speaks 2: run the same penny version on both ends".
 */
int pn_bw_hello_send(int fd, const struct pn_bw_hello *h, double timeout);
int pn_bw_hello_recv(int fd, struct pn_bw_hello *h, double timeout);

/* A dropped connection: "ADDRESS:PORT: why" (the server goes on waiting). */
typedef void pn_bw_drop_fn(const char *who, const char *why);
/*
 * The server's wait for a client on lfd: connections are accepted for
 * timeout seconds; each has timeout from its accept to say a whole hello.
 * One that is not a penny bw client of this version (garbage, another
 * version, closed at once, silent until its time is up or 16 newer ones
 * wait) is dropped, told to drop, and the server goes on waiting.  The
 * first whole hello wins: its socket (blocking) is returned, the hello is
 * in *peer.
 */
int pn_bw_accept_client(int lfd, double timeout, struct pn_bw_hello *peer, pn_bw_drop_fn *drop);
/* Listen on host:port (host NULL: any); the socket or -errno with a message. */
int pn_bw_listen(const char *host, int port, int *out_port);
/* The server refused the first connection: the client retries until the
 * timeout (NULL: silently). */
typedef void pn_bw_refused_fn(void *arg, const char *host, int port, double timeout);
/* Connect to the server, retrying until the timeout; a blocking socket or
 * -errno (-ECONNREFUSED when the server refused to the end). */
int pn_bw_connect(const char *host, int port, double timeout, pn_bw_refused_fn *refused,
		  void *arg);
/*
 * The data connection of a launcher's pair and of --loopback over TCP,
 * bound to its run with the tcp mesh's hello (transport/tcpmesh.h): the
 * listening side, rank me, draws a key (pn_bw_data_key) that reaches its
 * peer, rank me + 1, only through the job's rendezvous (or the fork of
 * --loopback); both sides pass me.  pn_bw_data_accept sends every
 * connection a challenge and takes the first that proves the key within
 * the timeout (a blocking socket); one that does not (a stranger: garbage,
 * silence, a hello made with another key) is dropped (drop, may be NULL)
 * and waited past, as by pn_bw_accept_client.  pn_bw_data_connect
 * connects, proves the key and checks the listener's proof: a blocking
 * socket, or -errno with a message (-EACCES: HOST:PORT is not the peer of
 * this run).
 */
#define PN_BW_KEY_LEN 32
int pn_bw_data_key(uint8_t key[PN_BW_KEY_LEN]);
int pn_bw_data_accept(int lfd, const uint8_t key[PN_BW_KEY_LEN], int me, double timeout,
		      pn_bw_drop_fn *drop);
int pn_bw_data_connect(const char *host, int port, const uint8_t key[PN_BW_KEY_LEN], int me,
		       double timeout);

#endif
