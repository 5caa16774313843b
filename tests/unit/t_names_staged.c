/* SPDX-License-Identifier: MIT */
/* Two names of the hardening round: penny check's node name in a row
 * (src/check/check_row.c: whole when it fits, else cut visibly with "...",
 * never to bytes that read as whole, nor in a UTF-8 character), and the
 * staged --nccl-graph file names (src/plan/plan_files.c: ".NAME.PID-I~",
 * the only names a later run removes when their process is gone). */
#define _GNU_SOURCE
#include "unit.h"

#include "base/verdict.h"
#include "check/check_row.h"
#include "plan/plan_files.h"

#include <stdio.h>
#include <string.h>

TEST(row_name_whole_or_cut_visibly)
{
	char out[PN_VERDICT_NAME], h64[65], want[64];

	CHECK_EQ_INT(pn_check_row_name(out, sizeof(out), "n01"), 0);
	CHECK_STR(out, "n01");
	/* 63 bytes: whole */
	memset(h64, 'h', 63);
	h64[63] = 0;
	CHECK_EQ_INT(pn_check_row_name(out, sizeof(out), h64), 0);
	CHECK_STR(out, h64);
	/* 64 (Linux's longest hostname): 60 bytes and the mark, not 63 */
	h64[63] = 'z';
	h64[64] = 0;
	CHECK_EQ_INT(pn_check_row_name(out, sizeof(out), h64), 1);
	snprintf(want, sizeof(want), "%.60s...", h64);
	CHECK_STR(out, want);
	CHECK_EQ_INT((int)strlen(out), 63);
	/* never inside a UTF-8 character: "é" (2 bytes) at bytes 59-60 */
	memset(h64, 'a', 64);
	h64[59] = (char)0xc3;
	h64[60] = (char)0xa9;
	CHECK_EQ_INT(pn_check_row_name(out, sizeof(out), h64), 1);
	CHECK_STR(out, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...");
	/* a narrower field (the alltoall's detail) */
	CHECK_EQ_INT(pn_check_row_name(out, 17, "dgx-h100-cluster-a-rack07-node01"), 1);
	CHECK_STR(out, "dgx-h100-clus...");
}

TEST(staged_names_parsed_exactly)
{
	char base[201];
	long pid = 0;

	CHECK_EQ_INT(pn_plan_stage_parse(".g-a.xml.1234-0~", base, sizeof(base), &pid), 1);
	CHECK_STR(base, "g-a.xml");
	CHECK(pid == 1234);
	CHECK_EQ_INT(pn_plan_stage_parse(".a.5-12~", base, sizeof(base), &pid), 1);
	CHECK_STR(base, "a");
	CHECK(pid == 5);
	/* a NAME that itself looks like a staged tail: the last one counts */
	CHECK_EQ_INT(pn_plan_stage_parse(".x.1-2~.77-3~", base, sizeof(base), &pid), 1);
	CHECK_STR(base, "x.1-2~");
	CHECK(pid == 77);
	/* not staged names */
	CHECK_EQ_INT(pn_plan_stage_parse("g-a.xml.1234-0~", base, sizeof(base), &pid), 0);
	CHECK_EQ_INT(pn_plan_stage_parse(".g-a.xml.1234-0", base, sizeof(base), &pid), 0);
	CHECK_EQ_INT(pn_plan_stage_parse(".g-a.xml.1234-0~x", base, sizeof(base), &pid), 0);
	CHECK_EQ_INT(pn_plan_stage_parse(".g-a.xml.01234-0~", base, sizeof(base), &pid), 0);
	CHECK_EQ_INT(pn_plan_stage_parse(".g-a.xml.1234-01~", base, sizeof(base), &pid), 0);
	CHECK_EQ_INT(pn_plan_stage_parse(".g-a.xml.0-0~", base, sizeof(base), &pid), 0);
	CHECK_EQ_INT(pn_plan_stage_parse(".g-a.xml.-0~", base, sizeof(base), &pid), 0);
	CHECK_EQ_INT(pn_plan_stage_parse(".g-a.xml.12 34-0~", base, sizeof(base), &pid), 0);
	CHECK_EQ_INT(pn_plan_stage_parse("..1234-0~", base, sizeof(base), &pid), 0);
	CHECK_EQ_INT(pn_plan_stage_parse(".g-a.xml.ab6c1f", base, sizeof(base), &pid), 0);
	CHECK_EQ_INT(pn_plan_stage_parse(".g.12345678901-0~", base, sizeof(base), &pid), 0);
	/* a NAME longer than the caller holds */
	CHECK_EQ_INT(pn_plan_stage_parse(".abcdef.1-0~", base, 6, &pid), 0);
	CHECK_EQ_INT(pn_plan_stage_parse(".abcde.1-0~", base, 6, &pid), 1);
}

int main(void)
{
	RUN(row_name_whole_or_cut_visibly);
	RUN(staged_names_parsed_exactly);
	return unit_done();
}
