/* SPDX-License-Identifier: MIT */
/*
 * stranger: another user on the job's host, for the tests of issue 42.  It
 * watches the listening TCP sockets of its network namespace (as ss -l,
 * which any user may) and
 * connects to every TCP port that starts listening after it started, as
 * soon as it sees it, -n times each; it holds the connections open and
 * says nothing, unless told to speak:
 *
 *   --forge COOKIE  on each connection, claim rank -r (tag -g) knowing the
 *                   job's 16-byte cookie (32 hex digits): when the
 *                   listener speaks first (a challenge), answer with a
 *                   hello of tcpmesh.h whose proof is made with a key
 *                   guessed as the cookie and zeros
 *   --old           with --forge, also send at once the tcp mesh's hello
 *                   of before issue 42 (magic "PTCP", version 1, the
 *                   cookie), which that mesh believed
 *   --cookie-of ROOT  print the cookie of a job whose secret is
 *                   PENNY_COOKIE (or the cookie file) and whose root is
 *                   ROOT, and exit
 *
 * usage: stranger [-n CONNS] [-t SECONDS] [-x PORT]... [--forge HEX [--old]
 *                 [-r RANK] [-g TAG]] | --cookie-of HOST:PORT
 * It writes "ready" on stdout once it knows the ports that were there
 * before, and on exit (after -t seconds, default 60, or SIGTERM) one line
 * on stderr: "stranger: L listeners, C connections, S spoke".  -x leaves a
 * port alone (the rendezvous).  Exit 0, or 2 on bad usage.
 */
#define _GNU_SOURCE
#include "base/sock.h"
#include "base/util.h"
#include "engine/boot.h"
#include "transport/tcpmesh.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXPORTS 4096
#define MAXCONN 60000

static volatile sig_atomic_t stop;
static unsigned char seen[65536];	/* 1: there at the start or attacked; 2: left alone */
static int conns[MAXCONN], nconn, nlisten, nspoke;
static int forge, old, claim_rank = 1;
static unsigned claim_tag = 1;
static uint8_t cookie[16];
static int spoke[MAXCONN];

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* The ports of the LISTEN sockets of this namespace (sock_diag, as ss -l
 * asks: cheap however many connections there are) into ports[]: how many. */
static int listening(int *ports, int max)
{
	static const int fams[] = { AF_INET, AF_INET6 };
	int n = 0;

	for (size_t f = 0; f < 2; f++) {
		struct {
			struct nlmsghdr nh;
			struct inet_diag_req_v2 r;
		} req = { .nh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
				  .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
			  .r = { .sdiag_family = (uint8_t)fams[f], .sdiag_protocol = IPPROTO_TCP,
				 .idiag_states = 1u << 10 /* TCP_LISTEN */ } };
		static char buf[65536];
		int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), done = 0;

		if (fd < 0 || send(fd, &req, sizeof(req), 0) < 0) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		while (!done) {
			ssize_t len = recv(fd, buf, sizeof(buf), 0);
			struct nlmsghdr *h = (struct nlmsghdr *)buf;

			if (len <= 0)
				break;
			for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
				struct inet_diag_msg *m = NLMSG_DATA(h);

				if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
					done = 1;
					break;
				}
				if (n < max)
					ports[n++] = ntohs(m->id.idiag_sport);
			}
		}
		close(fd);
	}
	return n;
}

static void old_hello(int fd)
{
	/* pn_tcp_mesh's hello before issue 42: magic, version, cookie, rank, tag */
	struct {
		uint32_t magic, version;
		uint8_t cookie[16];
		uint32_t rank, tag;
	} h = { 0x50544350u, 1, { 0 }, (uint32_t)claim_rank, claim_tag };

	memcpy(h.cookie, cookie, 16);
	if (write(fd, &h, sizeof(h)) < 0)
		return;
}

/* One connection to port, held open (and, forging, the old hello on it). */
static void attack(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd;

	if (nconn == MAXCONN)
		return;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return;
	}
	if (forge && old)
		old_hello(fd);
	spoke[nconn] = 0;
	conns[nconn++] = fd;
}

int main(int argc, char **argv)
{
	int ports[MAXPORTS], per = 30, seconds = 60, i, n;
	double end;

	signal(SIGPIPE, SIG_IGN);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--cookie-of") && v) {
			struct pn_boot_knobs kn = { .cookie = getenv("PENNY_COOKIE"),
						    .cookie_file = getenv("PENNY_COOKIE_FILE"),
						    .env = (const char *const *)environ,
						    .site_secret = PN_BOOT_SITE_SECRET };
			struct pn_boot_cfg cfg;

			/* the secret as penny reads it: its knobs, from this environment */
			pn_boot_set_knobs(&kn);
			pn_boot_cfg_init(&cfg);
			cfg.root = v;
			if (pn_boot_secret(&cfg)) {
				fprintf(stderr, "stranger: no secret\n");
				return 2;
			}
			pn_boot_derive_cookie(&cfg);
			for (int k = 0; k < 16; k++)
				printf("%02x", cfg.cookie[k]);
			printf("\n");
			return 0;
		} else if (!strcmp(a, "-n") && v) {
			per = atoi(v), i++;
		} else if (!strcmp(a, "-t") && v) {
			seconds = atoi(v), i++;
		} else if (!strcmp(a, "-x") && v) {
			seen[atoi(v) & 0xffff] = 2, i++;
		} else if (!strcmp(a, "-r") && v) {
			claim_rank = atoi(v), i++;
		} else if (!strcmp(a, "-g") && v) {
			claim_tag = (unsigned)strtoul(v, NULL, 0), i++;
		} else if (!strcmp(a, "--old")) {
			old = 1;
		} else if (!strcmp(a, "--forge") && v && strlen(v) == 32) {
			for (int k = 0; k < 16; k++)
				sscanf(v + 2 * k, "%2hhx", &cookie[k]);
			forge = 1, i++;
		} else {
			fprintf(stderr, "usage: stranger [-n CONNS] [-t SECONDS] [-x PORT]... [--forge "
					"HEX [--old] [-r RANK] [-g TAG]] | --cookie-of HOST:PORT\n");
			return 2;
		}
	}
	{
		struct rlimit rl;

		if (!getrlimit(RLIMIT_NOFILE, &rl)) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	n = listening(ports, MAXPORTS);
	for (i = 0; i < n; i++)
		if (!seen[ports[i]])
			seen[ports[i]] = 1;
	printf("ready\n");
	fflush(stdout);
	end = pn_now() + seconds;
	while (!stop && pn_now() < end) {
		n = listening(ports, MAXPORTS);
		for (i = 0; i < n; i++) {
			if (seen[ports[i]])
				continue;
			seen[ports[i]] = 1;
			nlisten++;
			for (int k = 0; k < per; k++)
				attack(ports[i]);
		}
		/* a listener that speaks first (a challenge): answer it, forged */
		for (i = 0; forge && i < nconn; i++) {
			struct pollfd p = { .fd = conns[i], .events = POLLIN };
			uint8_t buf[PN_TCPM_CHALLENGE_LEN], chal[PN_TCPM_NONCE_LEN], key[32] = { 0 };
			uint8_t nonce[PN_TCPM_NONCE_LEN] = { 1 }, hello[PN_TCPM_HELLO_LEN];

			if (spoke[i] || poll(&p, 1, 0) <= 0)
				continue;
			spoke[i] = 1;
			if (recv(conns[i], buf, sizeof(buf), MSG_DONTWAIT) != (ssize_t)sizeof(buf) ||
			    pn_tcpm_challenge_parse(buf, sizeof(buf), chal))
				continue;
			memcpy(key, cookie, 16);
			pn_tcpm_hello(hello, key, chal, (uint32_t)claim_rank, claim_tag, nonce);
			if (write(conns[i], hello, sizeof(hello)) == (ssize_t)sizeof(hello))
				nspoke++;
		}
		usleep(1000);
	}
	fprintf(stderr, "stranger: %d listeners, %d connections, %d spoke\n", nlisten, nconn, nspoke);
	for (i = 0; i < nconn; i++)
		close(conns[i]);
	return 0;
}
