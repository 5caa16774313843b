/* SPDX-License-Identifier: MIT */
/* Shared by the fuzz harnesses (tests/fuzz/fuzz_*.c): libFuzzer's entry points. */
#ifndef PENNY_FUZZ_H
#define PENNY_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string of exactly size + 1 bytes (free it). */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s) {
		memcpy(s, data, size);
		s[size] = 0;
	}
	return s;
}

/* A check that must hold: abort, so that libFuzzer and the replay report it. */
#define FUZZ_ASSERT(c)                                                                     \
	do {                                                                               \
		if (!(c))                                                                  \
			__builtin_trap();                                                  \
	} while (0)

#endif
