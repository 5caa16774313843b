/* SPDX-License-Identifier: MIT */
/*
 * Minimal TAP unit tests: TEST(name) { CHECK(...); } and in main
 * RUN(name); ... return unit_done();  Each TEST is one TAP line.
 */
#ifndef PENNY_UNIT_H
#define PENNY_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_n, unit_failed, unit_cur;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			unit_cur++;                                            \
			if (unit_cur <= 5)                                     \
				printf("#   %s:%d: CHECK(%s) failed\n", __FILE__, \
				       __LINE__, #cond);                       \
		}                                                              \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                     \
	do {                                                                   \
		long long _a = (long long)(a), _b = (long long)(b);            \
		if (_a != _b) {                                                \
			unit_cur++;                                            \
			if (unit_cur <= 5)                                     \
				printf("#   %s:%d: %s == %lld, want %lld\n",       \
				       __FILE__, __LINE__, #a, _a, _b);        \
		}                                                              \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *_a = (a), *_b = (b);                               \
		if (strcmp(_a, _b)) {                                          \
			unit_cur++;                                            \
			if (unit_cur <= 5)                                     \
				printf("#   %s:%d: %s == \"%s\", want \"%s\"\n",   \
				       __FILE__, __LINE__, #a, _a, _b);        \
		}                                                              \
	} while (0)

#define TEST(name) static void name(void)

static inline void unit_run(const char *name, void (*fn)(void))
{
	unit_cur = 0;
	fn();
	unit_n++;
	if (unit_cur) {
		unit_failed++;
		printf("not ok %d - %s (%d checks failed)\n", unit_n, name, unit_cur);
	} else {
		printf("ok %d - %s\n", unit_n, name);
	}
	fflush(stdout);
}

#define RUN(name) unit_run(#name, name)

static inline int unit_done(void)
{
	printf("1..%d\n", unit_n);
	return unit_failed ? 1 : 0;
}

#endif
