/* SPDX-License-Identifier: MIT */
/*
 * How two ranks of a tcp mesh (pn_tcp_mesh, transport.h) know each other:
 * the wire of the hello, pure functions over bytes for tcpmesh.c, the unit
 * tests and the fuzzer.
 *
 * Every rank that listens draws a key of 32 random bytes for this mesh and
 * publishes it with its address through the rendezvous, which only ranks
 * that proved the job's secret take part in (engine/boot.h); no one else
 * learns it.  On every accepted connection the listener speaks first:
 *
 *   CHALLENGE  listener -> connector  magic, version, 16 random bytes
 *   HELLO      connector -> listener  magic, version, rank, tag, its nonce
 *                                     (16 random bytes), mac
 *   WELCOME    listener -> connector  mac back
 *
 * HELLO's mac is HMAC-SHA-256(key, "penny tcp hello\0" + challenge + rank
 * + tag + nonce), WELCOME's HMAC-SHA-256(key, "penny tcp welcome\0" +
 * nonce + challenge + rank), key the listener's (base/sha256.h, as the
 * rendezvous proves the secret).  A stranger knows no key, and a hello
 * seen once answers no other challenge: it is neither joined nor
 * believed.  Integers are little-endian.
 */
#ifndef PENNY_TCPMESH_H
#define PENNY_TCPMESH_H

#include <stddef.h>
#include <stdint.h>

#define PN_TCPM_MAGIC 0x4d504350u	/* "PCPM" */
#define PN_TCPM_VERSION 2
#define PN_TCPM_KEY_LEN 32
#define PN_TCPM_NONCE_LEN 16
#define PN_TCPM_MAC_LEN 32
#define PN_TCPM_CHALLENGE_LEN 24	/* magic, version, challenge */
#define PN_TCPM_HELLO_LEN 64		/* magic, version, rank, tag, nonce, mac */
#define PN_TCPM_WELCOME_LEN 32		/* mac */

void pn_tcpm_challenge(uint8_t out[PN_TCPM_CHALLENGE_LEN],
		       const uint8_t challenge[PN_TCPM_NONCE_LEN]);
/* A challenge's bytes: 0 with the challenge, -EPROTO when they are none. */
int pn_tcpm_challenge_parse(const uint8_t *in, size_t len, uint8_t challenge[PN_TCPM_NONCE_LEN]);

void pn_tcpm_hello(uint8_t out[PN_TCPM_HELLO_LEN], const uint8_t key[PN_TCPM_KEY_LEN],
		   const uint8_t challenge[PN_TCPM_NONCE_LEN], uint32_t rank, uint32_t tag,
		   const uint8_t nonce[PN_TCPM_NONCE_LEN]);
/*
 * A hello received by rank me of nranks, listening for tag, that sent
 * challenge: 0 with the connector's rank (me < rank < nranks) and its
 * nonce; -EPROTO when it is no hello of this mesh (magic, version, tag,
 * rank), -EACCES when its mac does not prove the key (compared in constant
 * time).  No message is recorded: strangers are dropped quietly.
 */
int pn_tcpm_hello_check(const uint8_t *in, size_t len, const uint8_t key[PN_TCPM_KEY_LEN],
			const uint8_t challenge[PN_TCPM_NONCE_LEN], uint32_t tag, int me,
			int nranks, int *rank, uint8_t nonce[PN_TCPM_NONCE_LEN]);

void pn_tcpm_welcome(uint8_t out[PN_TCPM_WELCOME_LEN], const uint8_t key[PN_TCPM_KEY_LEN],
		     const uint8_t challenge[PN_TCPM_NONCE_LEN],
		     const uint8_t nonce[PN_TCPM_NONCE_LEN], uint32_t rank);
/* 0 when the welcome proves the key, -EACCES otherwise (constant time). */
int pn_tcpm_welcome_check(const uint8_t *in, size_t len, const uint8_t key[PN_TCPM_KEY_LEN],
			  const uint8_t challenge[PN_TCPM_NONCE_LEN],
			  const uint8_t nonce[PN_TCPM_NONCE_LEN], uint32_t rank);

#endif
