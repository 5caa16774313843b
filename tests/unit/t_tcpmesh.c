/* SPDX-License-Identifier: MIT */
/*
 * The tcp mesh's hello (transport/tcpmesh.h): challenge, hello and welcome
 * round trip; a stranger without the key, a hello replayed to another
 * challenge, to another listener (its key) or claiming another rank or
 * tag, and every cut or bent byte are refused.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "transport/tcpmesh.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

static uint8_t key[PN_TCPM_KEY_LEN], key2[PN_TCPM_KEY_LEN];
static uint8_t ch[PN_TCPM_NONCE_LEN], ch2[PN_TCPM_NONCE_LEN], nonce[PN_TCPM_NONCE_LEN];

static void fill(void)
{
	for (int i = 0; i < PN_TCPM_KEY_LEN; i++) {
		key[i] = (uint8_t)(i * 7 + 1);
		key2[i] = (uint8_t)(i * 7 + 2);
	}
	for (int i = 0; i < PN_TCPM_NONCE_LEN; i++) {
		ch[i] = (uint8_t)(0xa0 + i);
		ch2[i] = (uint8_t)(0xa0 + i);
		nonce[i] = (uint8_t)(0x30 + i);
	}
	ch2[15] ^= 1;
}

TEST(round_trip)
{
	uint8_t c[PN_TCPM_CHALLENGE_LEN], h[PN_TCPM_HELLO_LEN], w[PN_TCPM_WELCOME_LEN];
	uint8_t got[PN_TCPM_NONCE_LEN], n2[PN_TCPM_NONCE_LEN];
	int rank = -1;

	fill();
	pn_tcpm_challenge(c, ch);
	CHECK_EQ_INT(pn_tcpm_challenge_parse(c, sizeof(c), got), 0);
	CHECK(!memcmp(got, ch, sizeof(ch)));
	pn_tcpm_hello(h, key, ch, 5, 1, nonce);
	CHECK_EQ_INT(pn_tcpm_hello_check(h, sizeof(h), key, ch, 1, 2, 8, &rank, n2), 0);
	CHECK_EQ_INT(rank, 5);
	CHECK(!memcmp(n2, nonce, sizeof(nonce)));
	pn_tcpm_welcome(w, key, ch, nonce, 5);
	CHECK_EQ_INT(pn_tcpm_welcome_check(w, sizeof(w), key, ch, nonce, 5), 0);
	/* the welcome proves the key for this connection only */
	CHECK_EQ_INT(pn_tcpm_welcome_check(w, sizeof(w), key2, ch, nonce, 5), -EACCES);
	CHECK_EQ_INT(pn_tcpm_welcome_check(w, sizeof(w), key, ch2, nonce, 5), -EACCES);
	CHECK_EQ_INT(pn_tcpm_welcome_check(w, sizeof(w), key, ch, nonce, 4), -EACCES);
	CHECK_EQ_INT(pn_tcpm_welcome_check(w, sizeof(w) - 1, key, ch, nonce, 5), -EACCES);
}

TEST(strangers)
{
	uint8_t h[PN_TCPM_HELLO_LEN], b[PN_TCPM_HELLO_LEN], c[PN_TCPM_CHALLENGE_LEN], n2[16];
	int rank = -1;

	fill();
	pn_tcpm_hello(h, key, ch, 5, 1, nonce);
	/* replayed to another challenge, or to another listener (its key) */
	CHECK_EQ_INT(pn_tcpm_hello_check(h, sizeof(h), key, ch2, 1, 2, 8, &rank, n2), -EACCES);
	CHECK_EQ_INT(pn_tcpm_hello_check(h, sizeof(h), key2, ch, 1, 2, 8, &rank, n2), -EACCES);
	/* a guessed key (zeros, or the public cookie and zeros) */
	memset(b, 0, sizeof(b));
	{
		uint8_t zero[PN_TCPM_KEY_LEN] = { 0 };

		pn_tcpm_hello(b, zero, ch, 5, 1, nonce);
		CHECK_EQ_INT(pn_tcpm_hello_check(b, sizeof(b), key, ch, 1, 2, 8, &rank, n2), -EACCES);
	}
	/* another tag (the other mesh), a rank not above the listener or past the job */
	CHECK_EQ_INT(pn_tcpm_hello_check(h, sizeof(h), key, ch, 2, 2, 8, &rank, n2), -EPROTO);
	CHECK_EQ_INT(pn_tcpm_hello_check(h, sizeof(h), key, ch, 1, 5, 8, &rank, n2), -EPROTO);
	CHECK_EQ_INT(pn_tcpm_hello_check(h, sizeof(h), key, ch, 1, 6, 8, &rank, n2), -EPROTO);
	CHECK_EQ_INT(pn_tcpm_hello_check(h, sizeof(h), key, ch, 1, 2, 5, &rank, n2), -EPROTO);
	pn_tcpm_hello(b, key, ch, 0xffffffffu, 1, nonce);
	CHECK_EQ_INT(pn_tcpm_hello_check(b, sizeof(b), key, ch, 1, 2, 8, &rank, n2), -EPROTO);
	/* the rank or tag bent after the proof was made */
	memcpy(b, h, sizeof(h));
	b[8] = 6;
	CHECK_EQ_INT(pn_tcpm_hello_check(b, sizeof(b), key, ch, 1, 2, 8, &rank, n2), -EACCES);
	/* every single bit of it flipped: refused */
	for (size_t i = 0; i < sizeof(h) * 8; i++) {
		memcpy(b, h, sizeof(h));
		b[i / 8] ^= (uint8_t)(1u << (i % 8));
		CHECK(pn_tcpm_hello_check(b, sizeof(b), key, ch, 1, 2, 8, &rank, n2) < 0);
	}
	/* cut, or the old hello of before (magic "PTCP", version 1) */
	CHECK_EQ_INT(pn_tcpm_hello_check(h, sizeof(h) - 1, key, ch, 1, 2, 8, &rank, n2), -EPROTO);
	memcpy(b, "PCTP\1\0\0\0", 8);
	CHECK_EQ_INT(pn_tcpm_hello_check(b, sizeof(b), key, ch, 1, 2, 8, &rank, n2), -EPROTO);
	CHECK_EQ_INT(rank, -1);
	pn_tcpm_challenge(c, ch);
	CHECK_EQ_INT(pn_tcpm_challenge_parse(c, sizeof(c) - 1, n2), -EPROTO);
	c[4] = 1;
	CHECK_EQ_INT(pn_tcpm_challenge_parse(c, sizeof(c), n2), -EPROTO);
}

int main(void)
{
	RUN(round_trip);
	RUN(strangers);
	return unit_done();
}
