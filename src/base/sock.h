/* SPDX-License-Identifier: MIT */
/*
 * TCP sockets with deadlines, and penny's wire frame.  One place for what
 * the rendezvous (engine/boot.c), the self-launch (engine/launch.c), the
 * tcp transport and penny bw (harness/bwproto.c) do with sockets: listen,
 * connect and accept before a deadline, read and write a whole buffer
 * before a deadline.  Deadlines are absolute pn_now() seconds.  These
 * functions return a descriptor or 0, else a negative errno; they record
 * no message (the caller knows what the socket was for) except
 * pn_sock_resolve.
 *
 * The frame: a 40-byte header, every field little-endian on the wire
 * (magic, version, type, cookie, sender, sequence number, payload length),
 * then the payload.  Each protocol has its own magic and version; a peer
 * whose version differs is told apart from a stranger by its magic.
 */
#ifndef PENNY_SOCK_H
#define PENNY_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* host:port to an address (host NULL: any, to listen); -EHOSTUNREACH with a message. */
int pn_sock_resolve(const char *host, int port, int passive, struct sockaddr_storage *ss,
		    socklen_t *sl);
/*
 * Listen on sa (port 0: any free one): a close-on-exec descriptor, or
 * -errno.  *bound (may be NULL) is the address it got.
 */
int pn_sock_listen_addr(const struct sockaddr *sa, socklen_t sl, int backlog,
			struct sockaddr_storage *bound, socklen_t *bl);
/*
 * Listen on host:port (host NULL: every address, IPv6 and IPv4, on IPv6's
 * wildcard where the host has IPv6): each address host resolves to is
 * tried; an IPv4 name that is not a local address (NAT, an alias) listens
 * on any.  *out_port (may be NULL) is the port.  -EHOSTUNREACH (message
 * set) when host does not resolve.
 */
int pn_sock_listen(const char *host, int port, int backlog, int *out_port);
/*
 * Connect to ss before the deadline; while the peer is not there yet
 * (unreachable, a full backlog, and refused when retry_refused) it tries
 * again, backing off from 10 to 200 ms.  A non-blocking close-on-exec
 * descriptor with TCP_NODELAY; -ETIMEDOUT when the deadline passed (*last,
 * may be NULL, is the last error then); -errno of another error.
 */
int pn_sock_connect(const struct sockaddr_storage *ss, socklen_t sl, double deadline,
		    int retry_refused, int *last);
/*
 * Accept one connection before the deadline (a past one: only one that
 * waits already): a non-blocking close-on-exec descriptor with TCP_NODELAY,
 * -ETIMEDOUT, or -errno.
 */
int pn_sock_accept(int lfd, double deadline);
/* The port a listening TCP socket (IPv4 or IPv6) is bound to; -1 for any
 * other descriptor. */
int pn_sock_listening_port(int fd);
/* O_NONBLOCK on (1) or off (0): 0 or -errno. */
int pn_sock_nonblock(int fd, int on);
/* "address:port" of the peer ("?:0" when unknown); the address alone with port 0.
 * An IPv4 peer of an IPv6 socket (::ffff:a.b.c.d) is shown as a.b.c.d. */
void pn_sock_peer_name(int fd, char *out, size_t len);
void pn_sock_addr_name(const struct sockaddr_storage *ss, char *out, size_t len, int with_port);

/*
 * Write all of iov[0..n) (consumed) / read exactly len bytes before the
 * deadline, on a blocking or non-blocking socket: 0, -ETIMEDOUT, -EPIPE
 * when the peer closed, or -errno.
 */
int pn_sock_writev_full(int fd, struct iovec *iov, int n, double deadline);
int pn_sock_write_full(int fd, const void *buf, size_t len, double deadline);
int pn_sock_read_full(int fd, void *buf, size_t len, double deadline);

/* ---- the frame ---- */

#define PN_FRAME_HDR_LEN 40

struct pn_frame {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint8_t cookie[16];	/* the job's (zero where there is none) */
	uint32_t src;		/* sender (a rank) */
	uint32_t seq;		/* sequence number, or a code */
	uint64_t len;		/* payload bytes after the header */
};

/* Header to and from its 40 wire bytes. */
void pn_frame_put(uint8_t out[PN_FRAME_HDR_LEN], const struct pn_frame *f);
void pn_frame_get(struct pn_frame *f, const uint8_t in[PN_FRAME_HDR_LEN]);
/* Send a header and its payload in one write (one segment) before the deadline. */
int pn_frame_send(int fd, const struct pn_frame *f, const void *payload, double deadline);
/* Read a header before the deadline (0, or pn_sock_read_full's error). */
int pn_frame_recv(int fd, struct pn_frame *f, double deadline);
/*
 * Little-endian fields of a payload: put at p, return p past them (the
 * encoders of a protocol's payload; the decoders read what they wrote).
 */
uint8_t *pn_put_u16(uint8_t *p, uint16_t v);
uint8_t *pn_put_u32(uint8_t *p, uint32_t v);
uint8_t *pn_put_u64(uint8_t *p, uint64_t v);
uint8_t *pn_put_f64(uint8_t *p, double v);
uint8_t *pn_put_bytes(uint8_t *p, const void *v, size_t n);
const uint8_t *pn_get_u16(const uint8_t *p, uint16_t *v);
const uint8_t *pn_get_u32(const uint8_t *p, uint32_t *v);
const uint8_t *pn_get_u64(const uint8_t *p, uint64_t *v);
const uint8_t *pn_get_f64(const uint8_t *p, double *v);
const uint8_t *pn_get_bytes(const uint8_t *p, void *v, size_t n);

#endif
