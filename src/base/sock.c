/* SPDX-License-Identifier: MIT */
/* TCP sockets with deadlines and the wire frame (see base/sock.h). */
#define _GNU_SOURCE
#include "base/sock.h"
#include "base/log.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int ms_left(double deadline, int cap)
{
	return pn_poll_ms(deadline - pn_now(), cap);
}

int pn_sock_resolve(const char *host, int port, int passive, struct sockaddr_storage *ss,
		    socklen_t *sl)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = passive ? AI_PASSIVE : 0 };
	struct addrinfo *res = NULL;
	char ps[16];
	int ret;

	snprintf(ps, sizeof(ps), "%d", port);
	ret = getaddrinfo(host, ps, &hints, &res);
	if (ret || !res)
		return pn_err(-EHOSTUNREACH, "cannot resolve '%s': %s", host ? host : "*",
			      gai_strerror(ret));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sl = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int pn_sock_listen_addr(const struct sockaddr *sa, socklen_t sl, int backlog,
			struct sockaddr_storage *bound, socklen_t *bl)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, e;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6) {
		int zero = 0;

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	}
	if (bind(fd, sa, sl) || listen(fd, backlog))
		goto fail;
	if (bound) {
		*bl = sizeof(*bound);
		if (getsockname(fd, (struct sockaddr *)bound, bl))
			goto fail;
	}
	return fd;
fail:
	e = errno;
	close(fd);
	return -e;
}

int pn_sock_listen(const char *host, int port, int backlog, int *out_port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL, *ai;
	struct sockaddr_storage ss;
	socklen_t sl;
	char ps[16];
	int fd = -EADDRNOTAVAIL, ret, inet = 0;

	snprintf(ps, sizeof(ps), "%d", port);
	ret = getaddrinfo(host, ps, &hints, &res);
	if (ret || !res)
		return pn_err(-EHOSTUNREACH, "cannot resolve '%s': %s", host ? host : "*",
			      gai_strerror(ret));
	/* every address: IPv6's wildcard first, which takes IPv4 too (not
	 * V6ONLY), then IPv4's alone where the host has no IPv6 */
	for (ai = res; !host && ai && fd < 0; ai = ai->ai_next)
		if (ai->ai_family == AF_INET6)
			fd = pn_sock_listen_addr(ai->ai_addr, ai->ai_addrlen, backlog, &ss, &sl);
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = pn_sock_listen_addr(ai->ai_addr, ai->ai_addrlen, backlog, &ss, &sl);
		inet |= ai->ai_family == AF_INET;
	}
	freeaddrinfo(res);
	if (fd < 0 && host && inet) {
		/* the name may not be a local address (NAT, alias): any */
		struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
		int e = fd;

		fd = pn_sock_listen_addr((struct sockaddr *)&any, sizeof(any), backlog, &ss, &sl);
		if (fd < 0)
			fd = e;
	}
	if (fd >= 0 && out_port)
		*out_port = pn_sock_listening_port(fd);
	return fd;
}

int pn_sock_listening_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss), il = sizeof(int);
	int on = 0, type = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &il) || !on ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &il) || type != SOCK_STREAM ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl))
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -1;
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int pn_sock_connect(const struct sockaddr_storage *ss, socklen_t sl, double deadline,
		    int retry_refused, int *last)
{
	int delay_ms = 10;

	for (;;) {
		int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		int e = 0;
		socklen_t el = sizeof(e);

		if (fd < 0)
			return -errno;
		if (connect(fd, (const struct sockaddr *)ss, sl)) {
			e = errno;
			if (e == EINPROGRESS) {
				struct pollfd pfd = { .fd = fd, .events = POLLOUT };
				int ms = ms_left(deadline, 1000);

				e = ETIMEDOUT;
				if (ms > 0 && poll(&pfd, 1, ms) > 0 &&
				    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el))
					e = errno;
			}
		}
		if (!e) {
			nodelay(fd);
			return fd;
		}
		close(fd);
		if (last)
			*last = e;
		if ((e == ECONNREFUSED && !retry_refused) ||
		    (e != ECONNREFUSED && e != ETIMEDOUT && e != EHOSTUNREACH && e != ENETUNREACH &&
		     e != EINTR))
			return -e;
		if (pn_now() + delay_ms / 1000.0 > deadline)
			return -ETIMEDOUT;
		usleep((useconds_t)delay_ms * 1000);
		if (delay_ms < 200)
			delay_ms *= 2;
	}
}

int pn_sock_accept(int lfd, double deadline)
{
	for (;;) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int ms = ms_left(deadline, INT_MAX), fd, r;

		r = poll(&p, 1, ms > 0 ? ms : 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if ((errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) &&
			    pn_now() < deadline)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		nodelay(fd);
		return fd;
	}
}

int pn_sock_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl) ? -errno : 0;
}

void pn_sock_addr_name(const struct sockaddr_storage *ss, char *out, size_t len, int with_port)
{
	char host[64] = "?";
	int port = 0;

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
		port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		/* an IPv4 peer of a socket that takes both: its IPv4 address */
		if (IN6_IS_ADDR_V4MAPPED(a))
			inet_ntop(AF_INET, a->s6_addr + 12, host, sizeof(host));
		else
			inet_ntop(AF_INET6, a, host, sizeof(host));
		port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	}
	if (with_port)
		snprintf(out, len, "%s:%d", host, port);
	else
		snprintf(out, len, "%s", host);
}

void pn_sock_peer_name(int fd, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	memset(&ss, 0, sizeof(ss));
	if (getpeername(fd, (struct sockaddr *)&ss, &sl))
		ss.ss_family = AF_UNSPEC;
	pn_sock_addr_name(&ss, out, len, 1);
}

static int wait_fd(int fd, short ev, double deadline)
{
	struct pollfd pfd = { .fd = fd, .events = ev };
	int ms = ms_left(deadline, 100);

	if (ms <= 0)
		return -ETIMEDOUT;
	poll(&pfd, 1, ms);
	return 0;
}

int pn_sock_writev_full(int fd, struct iovec *iov, int n, double deadline)
{
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };

	while (m.msg_iovlen) {
		ssize_t w;

		if (!m.msg_iov->iov_len) {
			m.msg_iov++;
			m.msg_iovlen--;
			continue;
		}
		w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			size_t k = (size_t)w;

			while (k) {
				size_t d = PN_MIN(k, m.msg_iov->iov_len);

				m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + d;
				m.msg_iov->iov_len -= d;
				k -= d;
				if (!m.msg_iov->iov_len) {
					m.msg_iov++;
					m.msg_iovlen--;
				}
			}
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (wait_fd(fd, POLLOUT, deadline))
				return -ETIMEDOUT;
			continue;
		}
		return w < 0 ? -errno : -EPIPE;
	}
	return 0;
}

int pn_sock_write_full(int fd, const void *buf, size_t len, double deadline)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return pn_sock_writev_full(fd, &iov, 1, deadline);
}

int pn_sock_read_full(int fd, void *buf, size_t len, double deadline)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -EPIPE;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if (wait_fd(fd, POLLIN, deadline))
				return -ETIMEDOUT;
			continue;
		}
		return -errno;
	}
	return 0;
}

/* ---- the frame ---- */

uint8_t *pn_put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	return p + 2;
}

uint8_t *pn_put_u32(uint8_t *p, uint32_t v)
{
	return pn_put_u16(pn_put_u16(p, (uint16_t)v), (uint16_t)(v >> 16));
}

uint8_t *pn_put_u64(uint8_t *p, uint64_t v)
{
	return pn_put_u32(pn_put_u32(p, (uint32_t)v), (uint32_t)(v >> 32));
}

uint8_t *pn_put_f64(uint8_t *p, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return pn_put_u64(p, u);
}

uint8_t *pn_put_bytes(uint8_t *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return p + n;
}

const uint8_t *pn_get_u16(const uint8_t *p, uint16_t *v)
{
	*v = (uint16_t)(p[0] | p[1] << 8);
	return p + 2;
}

const uint8_t *pn_get_u32(const uint8_t *p, uint32_t *v)
{
	uint16_t lo, hi;

	p = pn_get_u16(pn_get_u16(p, &lo), &hi);
	*v = (uint32_t)lo | (uint32_t)hi << 16;
	return p;
}

const uint8_t *pn_get_u64(const uint8_t *p, uint64_t *v)
{
	uint32_t lo, hi;

	p = pn_get_u32(pn_get_u32(p, &lo), &hi);
	*v = (uint64_t)lo | (uint64_t)hi << 32;
	return p;
}

const uint8_t *pn_get_f64(const uint8_t *p, double *v)
{
	uint64_t u;

	p = pn_get_u64(p, &u);
	memcpy(v, &u, sizeof(u));
	return p;
}

const uint8_t *pn_get_bytes(const uint8_t *p, void *v, size_t n)
{
	memcpy(v, p, n);
	return p + n;
}

void pn_frame_put(uint8_t out[PN_FRAME_HDR_LEN], const struct pn_frame *f)
{
	uint8_t *p = pn_put_u32(out, f->magic);

	p = pn_put_u16(p, f->version);
	p = pn_put_u16(p, f->type);
	p = pn_put_bytes(p, f->cookie, sizeof(f->cookie));
	p = pn_put_u32(p, f->src);
	p = pn_put_u32(p, f->seq);
	pn_put_u64(p, f->len);
}

void pn_frame_get(struct pn_frame *f, const uint8_t in[PN_FRAME_HDR_LEN])
{
	const uint8_t *p = pn_get_u32(in, &f->magic);

	p = pn_get_u16(p, &f->version);
	p = pn_get_u16(p, &f->type);
	p = pn_get_bytes(p, f->cookie, sizeof(f->cookie));
	p = pn_get_u32(p, &f->src);
	p = pn_get_u32(p, &f->seq);
	pn_get_u64(p, &f->len);
}

int pn_frame_send(int fd, const struct pn_frame *f, const void *payload, double deadline)
{
	uint8_t h[PN_FRAME_HDR_LEN];
	struct iovec iov[2] = { { h, sizeof(h) }, { (void *)payload, (size_t)f->len } };

	pn_frame_put(h, f);
	return pn_sock_writev_full(fd, iov, f->len ? 2 : 1, deadline);
}

int pn_frame_recv(int fd, struct pn_frame *f, double deadline)
{
	uint8_t h[PN_FRAME_HDR_LEN];
	int ret = pn_sock_read_full(fd, h, sizeof(h), deadline);

	if (!ret)
		pn_frame_get(f, h);
	return ret;
}
