/* SPDX-License-Identifier: MIT */
/*
 * Bootstrap pieces that need no peers: poll timeouts that cannot overflow.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "../../src/log.h"
#include "../../src/util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

TEST(poll_ms)
{
	CHECK_EQ_INT(pn_poll_ms(0, 100), 0);
	CHECK_EQ_INT(pn_poll_ms(-5, 100), 0);
	CHECK_EQ_INT(pn_poll_ms(NAN, 100), 0);
	CHECK_EQ_INT(pn_poll_ms(0.0001, 100), 1);
	CHECK_EQ_INT(pn_poll_ms(0.05, 100), 50);
	CHECK_EQ_INT(pn_poll_ms(2147484.0, INT_MAX), INT_MAX);
	CHECK_EQ_INT(pn_poll_ms(INFINITY, 200), 200);
	CHECK_EQ_INT(pn_poll_ms(1e300, 200), 200);
}

int main(void)
{
	RUN(poll_ms);
	return unit_done();
}
