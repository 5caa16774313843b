/* SPDX-License-Identifier: MIT */
/*
 * Fuzz rank 0's check of what a connection to the rendezvous says first: a
 * header, then a hello (pn_wire_hello_check, src/engine/wire.c).  The input is the
 * byte stream, for a job of 4 ranks with the tag 00112233..eeff (what the
 * seeds in corpus/wire/ were written with), the secret and challenge below.
 * Checked for every prefix, as rank 0 sees the bytes arrive: only 0,
 * -EAGAIN, -EPROTO, -ESRCH (another job's tag), -EACCES or -EINVAL; the
 * first verdict that is not
 * -EAGAIN is the verdict on the whole input; a hello that passes is of this
 * job (rank 1..3, 4 ranks, a pid, printable terminated strings).  A whole
 * hello is checked again with its proof made right (a fuzzer cannot forge
 * one) when it has the tag, so that what rank 0 does with a proven hello
 * is fuzzed too.
 */
#include "engine/boot.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NRANKS 4

static const uint8_t tag[16] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
				    0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff };

static const uint8_t secret[32] = { 's', 'e', 'c', 'r', 'e', 't' };
static const uint8_t challenge[PN_WIRE_NONCE_LEN] = { 'c', 'h', 'a', 'l' };

static void printable(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && s[i]; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			abort();
	if (i == len)
		abort(); /* not terminated */
}

static void passed(const struct pn_wire_hello *h, size_t k, size_t whole)
{
	if (k != whole || h->rank < 1 || h->rank >= NRANKS || h->nranks != NRANKS || h->pid <= 0)
		abort();
	printable(h->host, sizeof(h->host));
	printable(h->host_id, sizeof(h->host_id));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const size_t whole = PN_FRAME_HDR_LEN + sizeof(struct pn_wire_hello);
	struct pn_wire_hello h;
	int first = -EAGAIN, ret = -EAGAIN;
	size_t k, n = size < whole ? size : whole;
	uint8_t *buf = malloc(n ? n : 1);

	if (!buf)
		return 0;
	/* an exact copy: reads past what arrived are caught */
	for (k = 0; k <= n; k++) {
		memcpy(buf, data, k);
		memset(&h, 0x5a, sizeof(h));
		ret = pn_wire_hello_check(buf, k, tag, secret, challenge, NRANKS, &h);
		if (ret != 0 && ret != -EAGAIN && ret != -EPROTO && ret != -ESRCH && ret != -EACCES &&
		    ret != -EINVAL)
			abort();
		if (ret == 0)
			passed(&h, k, whole);
		if (first == -EAGAIN)
			first = ret;
		else if (ret != first)
			abort(); /* a verdict changed as more bytes came */
	}
	if (ret == -EAGAIN && n == whole)
		abort(); /* a whole hello always gets a verdict */
	if (n == whole && ret == -EACCES && !memcmp(buf + 8, tag, sizeof(tag))) {
		struct pn_wire_hello m;

		memcpy(&m, buf + PN_FRAME_HDR_LEN, sizeof(m));
		pn_wire_hello_mac(secret, challenge, buf, &m, m.mac);
		memcpy(buf + PN_FRAME_HDR_LEN, &m, sizeof(m));
		ret = pn_wire_hello_check(buf, n, tag, secret, challenge, NRANKS, &h);
		if (ret != 0 && ret != -EINVAL)
			abort();
		if (ret == 0)
			passed(&h, n, whole);
	}
	free(buf);
	return 0;
}
