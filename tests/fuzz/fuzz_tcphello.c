/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: what a tcp mesh listener and connector read from a
 * connection (transport/tcpmesh.h): a challenge, a hello, a welcome.  The
 * listener's key, challenge and tag are fixed; the input is the bytes a
 * stranger sends.  No input but the one hello made with the key for that
 * challenge, rank and nonce is believed, and no welcome but the one made
 * with it; everything else is refused without a crash.
 */
#include "fuzz.h"

#include "transport/tcpmesh.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[PN_TCPM_KEY_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	static const uint8_t ch[PN_TCPM_NONCE_LEN] = { 9, 8, 7, 6, 5, 4, 3, 2, 1 };
	uint8_t got[PN_TCPM_NONCE_LEN], nonce[PN_TCPM_NONCE_LEN], again[PN_TCPM_HELLO_LEN];
	int rank = -1, r, me = size ? data[0] % 8 : 0;

	r = pn_tcpm_challenge_parse(data, size, got);
	FUZZ_ASSERT(r == 0 || r == -EPROTO);
	if (!r)
		FUZZ_ASSERT(size == PN_TCPM_CHALLENGE_LEN);
	r = pn_tcpm_hello_check(data, size, key, ch, 1, me, 16, &rank, nonce);
	FUZZ_ASSERT(r == 0 || r == -EPROTO || r == -EACCES);
	if (!r) {
		/* believed: it is exactly the hello the key makes */
		FUZZ_ASSERT(rank > me && rank < 16);
		pn_tcpm_hello(again, key, ch, (uint32_t)rank, 1, nonce);
		FUZZ_ASSERT(size == sizeof(again) && !memcmp(again, data, size));
	} else {
		FUZZ_ASSERT(rank == -1);
	}
	r = pn_tcpm_welcome_check(data, size, key, ch, ch, 3);
	if (!r) {
		uint8_t w[PN_TCPM_WELCOME_LEN];

		pn_tcpm_welcome(w, key, ch, ch, 3);
		FUZZ_ASSERT(size == sizeof(w) && !memcmp(w, data, size));
	}
	return 0;
}
