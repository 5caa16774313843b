/* SPDX-License-Identifier: MIT */
/* Sizes and durations (src/base/units.h): the one rule every option,
 * setting and plugin knob of penny takes. */
#include "unit.h"

#include "base/units.h"

#include <errno.h>
#include <string.h>

TEST(a_size_is_digits_with_a_binary_multiplier_and_an_optional_B_or_iB)
{
	uint64_t v = 0;

	CHECK(!pn_parse_size("8", &v) && v == 8);
	CHECK(!pn_parse_size("0", &v) && v == 0);
	CHECK(!pn_parse_size("12B", &v) && v == 12);
	CHECK(!pn_parse_size("12b", &v) && v == 12);
	CHECK(!pn_parse_size("1K", &v) && v == 1024);
	CHECK(!pn_parse_size("1k", &v) && v == 1024);
	CHECK(!pn_parse_size("64KB", &v) && v == 65536);
	CHECK(!pn_parse_size("64KiB", &v) && v == 65536);
	CHECK(!pn_parse_size("64kib", &v) && v == 65536);
	CHECK(!pn_parse_size("8M", &v) && v == 8u << 20);
	CHECK(!pn_parse_size("2MB", &v) && v == 2u << 20);
	CHECK(!pn_parse_size("1G", &v) && v == 1u << 30);
	CHECK(!pn_parse_size("1T", &v) && v == 1ull << 40);
	CHECK(!pn_parse_size("3TiB", &v) && v == 3ull << 40);
	CHECK(!pn_parse_size("18446744073709551615", &v) && v == UINT64_MAX);
}

TEST(anything_else_is_not_a_size)
{
	const char *bad[] = { "", "K", "B", "-1", "+1", " 1", "1 ", "1Q", "1KX", "1Ki", "1iB", "1BB",
			      "1KiBB", "1P", "1.5K", "0x10", "1e3", "inf", "1,5" };
	uint64_t v = 7;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(pn_parse_size(bad[i], &v) == -EINVAL);
		CHECK(v == 7);
	}
	CHECK(pn_parse_size(NULL, &v) == -EINVAL);
}

TEST(a_size_above_2_to_the_64_is_out_of_range)
{
	uint64_t v = 7;

	CHECK(pn_parse_size("18446744073709551616", &v) == -ERANGE);
	CHECK(pn_parse_size("99999999999999999999999", &v) == -ERANGE);
	CHECK(pn_parse_size("16777216T", &v) == -ERANGE);
	CHECK(pn_parse_size("20000000000T", &v) == -ERANGE);
	CHECK(v == 7);
	CHECK(!pn_parse_size("16777215T", &v) && v == 16777215ull << 40);
}

TEST(a_field_of_a_longer_string_and_inf_on_request)
{
	const char *s = "size=65536k,mode=1777";
	uint64_t v = 0;

	CHECK(!pn_parse_size_n(s + 5, 6, 0, &v) && v == 65536ull << 10);
	CHECK(pn_parse_size_n(s + 5, 7, 0, &v) == -EINVAL);
	CHECK(pn_parse_size_n(s, 0, 0, &v) == -EINVAL);
	CHECK(!pn_parse_size_n("1G:x", 2, 0, &v) && v == 1u << 30);
	CHECK(pn_parse_size_n("inf", 3, 0, &v) == -EINVAL);
	CHECK(!pn_parse_size_n("inf", 3, PN_SIZE_INF, &v) && v == UINT64_MAX);
	CHECK(!pn_parse_size_n("INF", 3, PN_SIZE_INF, &v) && v == UINT64_MAX);
	CHECK(pn_parse_size_n("infinity", 8, PN_SIZE_INF, &v) == -EINVAL);
	CHECK(!pn_parse_size_n("128K", 4, PN_SIZE_INF, &v) && v == 128u << 10);
}

TEST(a_duration_is_seconds_with_an_optional_unit)
{
	double d = 0;

	CHECK(!pn_parse_seconds("60", &d) && d == 60);
	CHECK(!pn_parse_seconds("1.5", &d) && d == 1.5);
	CHECK(!pn_parse_seconds(".5", &d) && d == 0.5);
	CHECK(!pn_parse_seconds("2e-3", &d) && d == 2e-3);
	CHECK(!pn_parse_seconds("2s", &d) && d == 2);
	CHECK(!pn_parse_seconds("500ms", &d) && d == 0.5);
	CHECK(!pn_parse_seconds("250us", &d) && d == 250e-6);
	CHECK(!pn_parse_seconds("1m", &d) && d == 60);
	CHECK(!pn_parse_seconds("2h", &d) && d == 7200);
	CHECK(!pn_parse_seconds("0", &d) && d == 0);
}

TEST(anything_else_is_not_a_duration)
{
	const char *bad[] = { "", "s", "-1", "+1", " 1", "1 ", "1y", "1S", "1sec", "1e", "0x10", "inf",
			      "nan", "1e999", "1..2", "1mss", "1e308h", "1e307m" };
	double d = 7;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(pn_parse_seconds(bad[i], &d) == -EINVAL);
		CHECK(d == 7);
	}
	CHECK(pn_parse_seconds(NULL, &d) == -EINVAL);
}

int main(void)
{
	RUN(a_size_is_digits_with_a_binary_multiplier_and_an_optional_B_or_iB);
	RUN(anything_else_is_not_a_size);
	RUN(a_size_above_2_to_the_64_is_out_of_range);
	RUN(a_field_of_a_longer_string_and_inf_on_request);
	RUN(a_duration_is_seconds_with_an_optional_unit);
	RUN(anything_else_is_not_a_duration);
	return unit_done();
}
