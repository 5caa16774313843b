/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104): the keyed hash of the
 * rendezvous' challenge-response (engine/boot.c), so that a rank proves it
 * holds the job's secret without sending it.  Not for bulk data.
 */
#ifndef PENNY_SHA256_H
#define PENNY_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define PN_SHA256_LEN 32

struct pn_sha256 {
	uint32_t h[8];
	uint64_t bytes;		/* message bytes so far */
	uint8_t buf[64];
	size_t nbuf;
};

void pn_sha256_init(struct pn_sha256 *s);
void pn_sha256_update(struct pn_sha256 *s, const void *data, size_t len);
void pn_sha256_final(struct pn_sha256 *s, uint8_t out[PN_SHA256_LEN]);
void pn_sha256(const void *data, size_t len, uint8_t out[PN_SHA256_LEN]);

/*
 * HMAC-SHA-256 of the concatenation of n parts (part i: p[i], l[i] bytes)
 * under key (any length).
 */
void pn_hmac_sha256(const void *key, size_t klen, int n, const void *const *p, const size_t *l,
		    uint8_t out[PN_SHA256_LEN]);
/* Compare in time that does not depend on where they differ: 0 when equal. */
int pn_memeq_ct(const void *a, const void *b, size_t len);

#endif
