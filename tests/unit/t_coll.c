/* SPDX-License-Identifier: MIT */
/* The collective layer's own state: pn_coll_init's ownership on failure. */
#define _GNU_SOURCE
#include "unit.h"

#include "../../src/coll.h"
#include "../../src/log.h"
#include "../../src/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[] = "/tmp/penny-t-coll.XXXXXX";

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* A failed pn_coll_init leaves nothing to free: release after it is harmless
 * (it used to free the node array twice). */
TEST(coll_init_failure_owns_nothing)
{
	struct pn_peer peers[2] = { { .node = 0, .local = 0 }, { .node = 0, .local = 1 } };
	struct pn_comm c = { .rank = 0, .nranks = 2, .nnodes = 1, .local_size = 2, .nchannels = 1,
			     .peers = peers };
	struct pn_coll co;
	char path[256];

	path_of(path, sizeof(path), "missing");
	setenv("PENNY_TUNE_FILE", path, 1);
	CHECK(pn_coll_init(&co, &c) == -ENOENT);
	CHECK(co.comm == NULL);
	CHECK(co.node == NULL);
	pn_coll_release(&co);
	pn_coll_release(&co);
	unsetenv("PENNY_TUNE_FILE");
	CHECK_EQ_INT(pn_coll_init(&co, &c), 0);
	CHECK(co.comm == &c);
	CHECK(co.node != NULL && co.node[1] == 0);
	pn_coll_release(&co);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	RUN(coll_init_failure_owns_nothing);
	rmdir(dir);
	return unit_done();
}
