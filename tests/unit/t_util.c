/* SPDX-License-Identifier: MIT */
/* Pure helpers: natural sort, number parsing, rate/state parsing, JSON output. */
#define _GNU_SOURCE
#include "unit.h"

#include "base/log.h"
#include "node/nic.h"
#include "base/out.h"
#include "base/util.h"

#include <errno.h>
#include <stdlib.h>

TEST(natural_sort)
{
	const char *v[] = { "mlx5_10", "mlx5_2", "mlx5_1", "rxe0", "mlx5_0", "mlx4_0", "mlx5_02" };
	qsort(v, PN_ARRAY_SIZE(v), sizeof(v[0]), pn_natcmp_qsort);
	CHECK_STR(v[0], "mlx4_0");
	CHECK_STR(v[1], "mlx5_0");
	CHECK_STR(v[2], "mlx5_1");
	CHECK(!strcmp(v[3], "mlx5_2") || !strcmp(v[3], "mlx5_02"));
	CHECK_STR(v[5], "mlx5_10");
	CHECK_STR(v[6], "rxe0");
	CHECK(pn_natcmp("a", "a") == 0);
	CHECK(pn_natcmp("a", "ab") < 0);
	CHECK(pn_natcmp("a9", "a10") < 0);
	CHECK(pn_natcmp("a10b", "a10a") > 0);
}

TEST(size_formatting)
{
	char b[32];

	CHECK_STR(pn_fmt_size(b, sizeof(b), 0), "0 B");
	CHECK_STR(pn_fmt_size(b, sizeof(b), 1000), "1000 B");
	CHECK_STR(pn_fmt_size(b, sizeof(b), 8u << 20), "8 MiB");
	CHECK_STR(pn_fmt_size(b, sizeof(b), 1536), "1536 B");
}

TEST(number_parsing)
{
	uint64_t u;
	double d;
	int i;

	CHECK(!pn_parse_int("-3", &i) && i == -3);
	CHECK(pn_parse_int("3x", &i) == -EINVAL);
	CHECK(pn_parse_int("99999999999", &i) == -ERANGE);
	CHECK(pn_parse_int("-99999999999", &i) == -ERANGE);
	CHECK(pn_parse_dec_u64("99999999999999999999", &u) == -ERANGE);
	CHECK(pn_parse_dec_u64("-1", &u) == -EINVAL && pn_parse_dec_int("", &i) == -EINVAL);
	/* what files say keeps C's prefixes; what a user types is decimal */
	CHECK(!pn_parse_int("0x10", &i) && i == 16);
	CHECK(!pn_parse_dec_int("010", &i) && i == 10);
	CHECK(pn_parse_dec_int("0x10", &i) == -EINVAL);
	CHECK(!pn_parse_dec_u64("08", &u) && u == 8);
	CHECK(pn_parse_dec_u64("0x10", &u) == -EINVAL);
	CHECK(pn_parse_double("nan", &d) == -EINVAL);
	CHECK(!pn_parse_double("2e3", &d) && d == 2000);
	CHECK(pn_parse_double("0x10", &d) == -EINVAL);
	CHECK(pn_parse_double("-0X1p4", &d) == -EINVAL);
}

TEST(knob_words)
{
	static const char *const bit[] = { "0", "1", NULL }, *const many[] = { "a", "b", "c", NULL };
	char big[300];

	CHECK_EQ_INT(pn_knob_choice("K", NULL, bit, 7), 7);
	CHECK_EQ_INT(pn_knob_choice("K", "", bit, 7), 7);
	CHECK_EQ_INT(pn_knob_choice("K", "1", bit, 7), 1);
	CHECK_EQ_INT(pn_knob_choice("K", "0", bit, 7), 0);
	CHECK_EQ_INT(pn_knob_choice("K", "yes", bit, 7), -EINVAL);
	CHECK(!strcmp(pn_errmsg(-EINVAL), "K='yes': want 0 or 1"));
	CHECK_EQ_INT(pn_knob_choice("K", " 1", bit, 7), -EINVAL);
	CHECK_EQ_INT(pn_knob_choice("K", "d", many, 0), -EINVAL);
	CHECK(!strcmp(pn_errmsg(-EINVAL), "K='d': want a or b or c"));
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK_EQ_INT(pn_knob_choice("K", big, bit, 0), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "x...': want 0 or 1") && strlen(pn_errmsg(-EINVAL)) < 80);
	pn_err_clear();
}

TEST(hostport_parsing)
{
	char h[64];
	int p;

	CHECK(!pn_parse_hostport("node1:2900", h, sizeof(h), &p) && !strcmp(h, "node1") && p == 2900);
	CHECK(!pn_parse_hostport("[::1]:80", h, sizeof(h), &p) && !strcmp(h, "::1") && p == 80);
	CHECK(pn_parse_hostport("node1", h, sizeof(h), &p) < 0);
	CHECK(pn_parse_hostport("node1:99999", h, sizeof(h), &p) < 0);
	CHECK(pn_parse_hostport("node1:x", h, sizeof(h), &p) < 0);
}

TEST(rate_and_state_parsing)
{
	char name[32];

	CHECK(pn_parse_rate("400 Gb/sec (4X NDR)") == 400);
	CHECK(pn_parse_rate("2.5 Gb/sec (1X SDR)") == 2.5);
	CHECK(pn_parse_rate("100 Gb/sec (2X HDR)") == 100);
	CHECK(pn_parse_rate("10 Mb/sec") == 0.01);
	CHECK(pn_parse_rate("garbage") == 0);
	CHECK(pn_parse_rate("") == 0);
	/* no line to measure against: each is that port's error, not 0 or inf */
	CHECK(pn_parse_rate("inf Gb/sec (4X NDR)") == 0);
	CHECK(pn_parse_rate("nan Gb/sec") == 0);
	CHECK(pn_parse_rate("-400 Gb/sec") == 0);
	CHECK(pn_parse_rate("0 Gb/sec") == 0);
	CHECK(pn_parse_rate("1e300 Gb/sec") == 0);
	CHECK(pn_parse_rate("1e999 Gb/sec") == 0);
	CHECK(pn_parse_rate("20000 Gb/sec") == 0);
	CHECK(pn_parse_rate("0x190 Gb/sec") == 0);
	CHECK(pn_parse_rate("0.0001 Mb/sec") == 0);
	CHECK(pn_parse_rate("1.6 Tb/sec") == 1600);
	CHECK(pn_parse_state("4: ACTIVE", name, sizeof(name)) == 4 && !strcmp(name, "ACTIVE"));
	CHECK(pn_parse_state("5: LinkUp", name, sizeof(name)) == 5 && !strcmp(name, "LinkUp"));
	CHECK(pn_parse_state("ACTIVE", name, sizeof(name)) == -1);
	CHECK(pn_port_state_from_name("active") == 4);
	CHECK(pn_port_state_from_name("DOWN") == 1);
	CHECK(pn_port_state_from_name("sleeping") == -1);
}

TEST(debug_subsystems)
{
	unsigned m = 0;

	CHECK(!pn_debug_parse("BOOT,net", &m) && m == (PN_LOG_BOOT | PN_LOG_NET));
	CHECK(!pn_debug_parse("^SHM", &m) && !(m & PN_LOG_SHM) && (m & PN_LOG_BOOT));
	CHECK(!pn_debug_parse("", &m) && m == PN_LOG_ALL);
	CHECK(pn_debug_parse("BOOT,NOPE", &m) == -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "'NOPE'") != NULL);
	/* PENNY_DEBUG's list is --debug's: no empty element, the last one neither */
	m = 7;
	CHECK(pn_debug_parse("NET,", &m) == -EINVAL && m == 7);
	CHECK(strstr(pn_errmsg(-EINVAL), "'NET,' ends with a comma") != NULL);
	CHECK(pn_debug_parse("NET,,SHM", &m) == -EINVAL && m == 7);
	CHECK(pn_debug_parse(",NET", &m) == -EINVAL && m == 7);
	pn_err_clear();
}

static char *render(int json, void (*fn)(struct pn_out *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct pn_out *o = pn_out_new(f, json);

	fn(o);
	pn_out_free(o);
	fclose(f);
	return buf;
}

static void sample(struct pn_out *o)
{
	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_ANY, "name", "%-8s", "mlx5_0");
	pn_out_uint(o, PN_ANY, "port", " %u", 1);
	pn_out_float(o, PN_ANY, "rate", " %6.1f", 400.0);
	pn_out_float(o, PN_ANY, "bad", " %6.1f", 0.0 / 0.0);
	pn_out_str(o, PN_JSON, "quote", NULL, "a\"b\\c\n\x01");
	pn_out_open_array(o, "list");
	pn_out_int(o, PN_JSON, NULL, NULL, -1);
	pn_out_int(o, PN_JSON, NULL, NULL, 2);
	pn_out_close_array(o);
	pn_out_open_object(o, "nested");
	pn_out_bool(o, PN_ANY, "ok", " %s", 1);
	pn_out_null(o, PN_JSON, "none", NULL);
	pn_out_close_object(o);
	pn_out_text(o, "\n");
	pn_out_close_object(o);
}

TEST(one_output_path)
{
	char *t = render(0, sample), *j = render(1, sample);

	CHECK_STR(t, "mlx5_0   1  400.0    n/a yes\n");
	CHECK_STR(j, "{\"version\":1,\"name\":\"mlx5_0\",\"port\":1,\"rate\":400,\"bad\":null,"
		     "\"quote\":\"a\\\"b\\\\c\\n\\u0001\",\"list\":[-1,2],"
		     "\"nested\":{\"ok\":true,\"none\":null}}\n");
	free(t);
	free(j);
}

TEST(grow_by_doubling)
{
	size_t cap = 0, n;
	int *a = NULL, *b;

	/* empty: first; full: twice; room: the same array */
	a = pn_grow(a, &cap, 0, sizeof(*a), 4, 100);
	CHECK(a != NULL && cap == 4);
	b = pn_grow(a, &cap, 3, sizeof(*a), 4, 100);
	CHECK(b == a && cap == 4);
	for (n = 0; n < 100; n++) {
		b = pn_grow(a, &cap, n, sizeof(*a), 4, 100);
		CHECK(b != NULL && cap > n && cap <= 100);
		a = b;
		a[n] = (int)n;
	}
	CHECK_EQ_INT(cap, 100); /* 4, 8, ..., 64, then the bound */
	CHECK_EQ_INT(a[99], 99);
	/* at the bound: NULL, the array and its capacity as they were */
	CHECK(pn_grow(a, &cap, 100, sizeof(*a), 4, 100) == NULL && cap == 100);
	free(a);
	/* a size that would overflow: NULL, nothing changed */
	cap = 2;
	a = malloc(2 * sizeof(*a));
	CHECK(pn_grow(a, &cap, 2, SIZE_MAX / 2, 1, SIZE_MAX) == NULL && cap == 2);
	free(a);
}

/* The output digest: equal bits give equal digests; one flipped bit, a
 * tail byte or another length gives another. */
TEST(digest_of_outputs)
{
	unsigned char a[37], b[37];
	uint64_t d;

	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (unsigned char)(i * 7 + 1);
	memcpy(b, a, sizeof(a));
	d = pn_digest64(0, a, sizeof(a));
	CHECK(d == pn_digest64(0, b, sizeof(b)));
	b[3] ^= 0x10;
	CHECK(d != pn_digest64(0, b, sizeof(b)));
	b[3] ^= 0x10;
	b[36] ^= 1; /* in the tail, past the last whole word */
	CHECK(d != pn_digest64(0, b, sizeof(b)));
	b[36] ^= 1;
	CHECK(d != pn_digest64(0, b, sizeof(b) - 1));
	/* zeros of different lengths differ too */
	memset(a, 0, sizeof(a));
	CHECK(pn_digest64(0, a, 8) != pn_digest64(0, a, 16));
	/* chained in pieces: deterministic */
	CHECK(pn_digest64(pn_digest64(0, a, 16), a + 16, 21) ==
	      pn_digest64(pn_digest64(0, a, 16), a + 16, 21));
}

/* A message as long as a line cmd/ says (1023 bytes) is kept whole:
 * messages that name what the user gave (a --backend list) moved into
 * src/ without getting shorter. */
TEST(long_error_message_kept)
{
	char big[1100];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK_EQ_INT(pn_err(-EINVAL, "%.900s", big), -EINVAL);
	CHECK_EQ_INT((int)strlen(pn_errmsg(-EINVAL)), 900);
	pn_err(-EINVAL, "%s", big);
	CHECK_EQ_INT((int)strlen(pn_errmsg(-EINVAL)), 1023);
	pn_err_clear();
}

int main(void)
{
	RUN(digest_of_outputs);
	RUN(natural_sort);
	RUN(size_formatting);
	RUN(grow_by_doubling);
	RUN(number_parsing);
	RUN(knob_words);
	RUN(hostport_parsing);
	RUN(rate_and_state_parsing);
	RUN(debug_subsystems);
	RUN(one_output_path);
	RUN(long_error_message_kept);
	return unit_done();
}
