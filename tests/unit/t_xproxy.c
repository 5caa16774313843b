/* SPDX-License-Identifier: MIT */
/* The cross-node proxy's pure parts: the credit arithmetic a sender uses
 * before it writes into a peer's inbox slot (gpu/xproxy_verbs.h, also the
 * shm and tcp paths' slot_free), and the check of its settings. */
#include "unit.h"
#include "gpu/xproxy.h"
#include "gpu/xproxy_verbs.h"

#include <stdint.h>
#include <string.h>

TEST(first_ring_lands_without_credit)
{
	for (uint32_t slots = 2; slots <= 16; slots++)
		for (uint64_t k = 0; k < slots; k++)
			CHECK(pn_xbox_may_land(0, k, slots));
	CHECK(!pn_xbox_may_land(0, 8, 8));
}

TEST(boundary_is_the_chunk_a_ring_earlier)
{
	/* chunk k reuses chunk k - slots's slot: its done (k - slots + 1) frees it */
	CHECK(pn_xbox_may_land(1, 8, 8));
	CHECK(!pn_xbox_may_land(0, 8, 8));
	CHECK(pn_xbox_may_land(93, 100, 8));
	CHECK(!pn_xbox_may_land(92, 100, 8));
	CHECK(pn_xbox_may_land(1000, 100, 8));	/* a newer done word frees it too */
	/* no wrap-around at the top of the counter */
	CHECK(pn_xbox_may_land(UINT64_MAX - 1024, UINT64_MAX - 1, 1024));
	CHECK(!pn_xbox_may_land(UINT64_MAX - 1025, UINT64_MAX - 1, 1024));
}

/*
 * A sender and a reader of one ring, the reader lagging by a varying amount,
 * against a model that knows only which slots hold a chunk not yet read (no
 * arithmetic on chunk numbers): the sender may write exactly into a slot
 * with nothing unread in it, so it never overwrites one and never waits
 * longer than it must.
 */
TEST(sender_never_overtakes_the_reader)
{
	for (uint32_t slots = 2; slots <= 9; slots++) {
		uint64_t done[9], landed[9], sent = 0, read = 0;
		int unread[9];
		unsigned lag = 1;

		memset(done, 0, sizeof(done));
		memset(landed, 0, sizeof(landed));
		memset(unread, 0, sizeof(unread));
		for (int step = 0; step < 5000; step++) {
			uint32_t s = (uint32_t)(sent % slots);
			int may = pn_xbox_may_land(done[s], sent, slots);

			CHECK_EQ_INT(may, !unread[s]);
			if (may) {
				landed[s] = sent + 1;
				unread[s] = 1;
				sent++;
			}
			lag = lag * 1103515245u + 12345u;
			if (read < sent && (lag >> 16) % 3) {
				uint32_t r = (uint32_t)(read % slots);

				/* the reader finds the chunk it expects, unread */
				CHECK(unread[r] && landed[r] == read + 1);
				done[r] = read + 1;
				unread[r] = 0;
				read++;
			}
		}
		CHECK(sent > 1000);
	}
}

static void cfg_init(struct pn_xproxy_cfg *c)
{
	static const int ranks[2] = { 0, 1 };

	memset(c, 0, sizeof(*c));
	c->nnodes = 2;
	c->ranks = ranks;
	c->slots = 8;
	c->slot_bytes = 1 << 20;
	c->timeout = 10;
	c->sockets = 4;
	c->qps = 1;
}

TEST(settings_checked)
{
	struct pn_xproxy_cfg c;

	cfg_init(&c);
	CHECK_EQ_INT(pn_xproxy_check_cfg(&c), 0);
	c.transport = "verbs";
	CHECK_EQ_INT(pn_xproxy_check_cfg(&c), 0);
	c.transport = "ib";
	CHECK(pn_xproxy_check_cfg(&c) < 0);
	c.transport = "auto";
	for (int q = -1; q <= 10; q++) {
		c.qps = q;
		CHECK_EQ_INT(pn_xproxy_check_cfg(&c) == 0, q >= 1 && q <= PN_XVERBS_MAX_QPS);
	}
}

int main(void)
{
	RUN(first_ring_lands_without_credit);
	RUN(boundary_is_the_chunk_a_ring_earlier);
	RUN(sender_never_overtakes_the_reader);
	RUN(settings_checked);
	return unit_done();
}
