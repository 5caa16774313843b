/* SPDX-License-Identifier: MIT */
/* minijson: what a strict RFC 8259 reader accepts, refuses, and says. */
#define _GNU_SOURCE
#include "unit.h"

#include "base/log.h"
#include "base/minijson.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static int parse(struct pn_json_doc *d, const char *s)
{
	return pn_json_parse(d, s, strlen(s));
}

/* Parses or not; on failure the message must contain want (if given). */
static int refuses(const char *s, const char *want)
{
	struct pn_json_doc d;
	int ret;

	pn_err_clear();
	ret = parse(&d, s);
	if (!ret) {
		pn_json_release(&d);
		printf("#   accepted: %s\n", s);
		return 0;
	}
	if (want && !strstr(pn_errmsg(ret), want)) {
		printf("#   '%s': message '%s' lacks '%s'\n", s, pn_errmsg(ret), want);
		return 0;
	}
	return ret == -EINVAL;
}

TEST(values)
{
	struct pn_json_doc d;
	const struct pn_jval *v;
	long long i;
	double x;

	CHECK(!parse(&d, " { \"a\" : [1, -2, 3.5, 1e3, -0, 0.25E-2, true, false, null],"
			 "\"b\": {\"c\": \"d\"}, \"e\": [] , \"f\": {} }\n"));
	v = pn_json_get(d.root, "a");
	CHECK(v && v->type == PN_JSON_ARRAY && pn_json_len(v) == 9);
	CHECK(!pn_json_int(pn_json_at(v, 0), &i) && i == 1);
	CHECK(!pn_json_int(pn_json_at(v, 1), &i) && i == -2);
	CHECK(pn_json_int(pn_json_at(v, 2), &i) == -EINVAL);
	CHECK(!pn_json_num(pn_json_at(v, 2), &x) && x == 3.5);
	CHECK(!pn_json_int(pn_json_at(v, 3), &i) && i == 1000);
	CHECK(!pn_json_num(pn_json_at(v, 5), &x) && x == 0.0025);
	CHECK(pn_json_at(v, 6)->type == PN_JSON_BOOL && pn_json_at(v, 6)->u.b == 1);
	CHECK(pn_json_at(v, 7)->type == PN_JSON_BOOL && pn_json_at(v, 7)->u.b == 0);
	CHECK(pn_json_at(v, 8)->type == PN_JSON_NULL);
	CHECK(pn_json_at(v, 9) == NULL);
	CHECK_STR(pn_json_str(pn_json_get(pn_json_get(d.root, "b"), "c")), "d");
	CHECK(pn_json_len(pn_json_get(d.root, "e")) == 0);
	CHECK(pn_json_get(d.root, "f")->type == PN_JSON_OBJECT);
	/* wrong types give NULL / errors, never crash */
	CHECK(pn_json_get(v, "x") == NULL);
	CHECK(pn_json_at(d.root, 0) == NULL);
	CHECK(pn_json_str(v) == NULL);
	CHECK(pn_json_get(NULL, "a") == NULL);
	CHECK(pn_json_int(NULL, &i) == -EINVAL);
	CHECK(pn_json_get(d.root, "b")->line == 1);
	pn_json_release(&d);

	CHECK(!parse(&d, "42"));
	CHECK(!pn_json_int(d.root, &i) && i == 42);
	pn_json_release(&d);
	CHECK(!parse(&d, "9007199254740993"));
	CHECK(pn_json_int(d.root, &i) == -EINVAL); /* beyond 2^53 */
	pn_json_release(&d);
}

TEST(strings)
{
	struct pn_json_doc d;

	CHECK(!parse(&d, "[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\\u20ac\", "
			 "\"\\ud83d\\ude00\", \"caf\xc3\xa9\", \"\"]"));
	CHECK_STR(pn_json_str(pn_json_at(d.root, 0)), "a\"b\\c/d\b\f\n\r\t");
	CHECK_STR(pn_json_str(pn_json_at(d.root, 1)), "\xc3\xa9\xe2\x82\xac");
	CHECK_STR(pn_json_str(pn_json_at(d.root, 2)), "\xf0\x9f\x98\x80");
	CHECK_STR(pn_json_str(pn_json_at(d.root, 3)), "caf\xc3\xa9");
	CHECK(pn_json_at(d.root, 3)->n == 5);
	CHECK_STR(pn_json_str(pn_json_at(d.root, 4)), "");
	pn_json_release(&d);
}

TEST(refused)
{
	CHECK(refuses("", "value expected"));
	CHECK(refuses("   ", "value expected"));
	CHECK(refuses("[1,]", "value expected"));
	CHECK(refuses("{\"a\":1,}", "expected a string key"));
	CHECK(refuses("[1 2]", "expected ',' or ']'"));
	CHECK(refuses("{\"a\" 1}", "expected ':'"));
	CHECK(refuses("{a:1}", "expected a string key"));
	CHECK(refuses("01", "leading zero"));
	CHECK(refuses("1.", "digit expected after decimal point"));
	CHECK(refuses(".5", "value expected"));
	CHECK(refuses("+1", "value expected"));
	CHECK(refuses("1e", "digit expected in exponent"));
	CHECK(refuses("-", "invalid number"));
	CHECK(refuses("1e400", "out of range"));
	CHECK(refuses("NaN", "value expected"));
	CHECK(refuses("Infinity", "value expected"));
	CHECK(refuses("tru", "invalid literal"));
	CHECK(refuses("nulll", "trailing data"));
	CHECK(refuses("'a'", "value expected"));
	CHECK(refuses("[1] // c", "trailing data"));
	CHECK(refuses("/* c */ 1", "value expected"));
	CHECK(refuses("{} {}", "trailing data"));
	CHECK(refuses("\"abc", "unterminated string"));
	CHECK(refuses("\"a\tb\"", "raw control character"));
	CHECK(refuses("\"\\x\"", "invalid escape"));
	CHECK(refuses("\"\\u12\"", "\\u escape"));
	CHECK(refuses("\"\\u12x4\"", "invalid \\u escape"));
	CHECK(refuses("\"\\udc00\"", "lone low surrogate"));
	CHECK(refuses("\"\\ud800x\"", "high surrogate without low"));
	CHECK(refuses("\"\\ud800\\u0041\"", "high surrogate without low"));
	CHECK(refuses("\"\\u0000\"", "\\u0000"));
	CHECK(refuses("\"\xc0\xaf\"", "invalid UTF-8")); /* overlong '/' */
	CHECK(refuses("\"\xed\xa0\x80\"", "invalid UTF-8")); /* encoded surrogate */
	CHECK(refuses("\"\xf5\x80\x80\x80\"", "invalid UTF-8"));
	CHECK(refuses("\"\xe2\x82\"", "invalid UTF-8")); /* truncated */
	CHECK(refuses("\xef\xbb\xbf{}", "byte-order mark"));
	CHECK(refuses("{\"a\":1,\"a\":2}", "duplicate key 'a'"));
	CHECK(refuses("\x01", "byte 0x01"));
}

TEST(error_position)
{
	struct pn_json_doc d;
	int ret;

	pn_err_clear();
	ret = parse(&d, "{\n  \"a\": [1,\n     2 3]\n}");
	CHECK(ret == -EINVAL);
	CHECK(strstr(pn_errmsg(ret), "line 3 column 8") != NULL);
}

TEST(depth_limit)
{
	char deep[2 * PN_JSON_MAX_DEPTH + 8];
	struct pn_json_doc d;
	int n;

	for (n = 0; n < PN_JSON_MAX_DEPTH; n++)
		deep[n] = '[';
	for (; n < 2 * PN_JSON_MAX_DEPTH; n++)
		deep[n] = ']';
	deep[n] = 0;
	CHECK(!parse(&d, deep));
	pn_json_release(&d);
	memmove(deep + 1, deep, strlen(deep) + 1);
	deep[0] = '[';
	strcat(deep, "]");
	CHECK(refuses(deep, "nesting too deep"));
}

TEST(large_containers)
{
	struct pn_json_doc d;
	size_t cap = 1 << 20, n = 0;
	char *s = malloc(cap);
	long long v;
	int i;

	n += (size_t)sprintf(s + n, "[");
	for (i = 0; i < 100000; i++)
		n += (size_t)sprintf(s + n, "%s%d", i ? "," : "", i);
	n += (size_t)sprintf(s + n, "]");
	CHECK(!pn_json_parse(&d, s, n));
	CHECK(pn_json_len(d.root) == 100000);
	CHECK(!pn_json_int(pn_json_at(d.root, 99999), &v) && v == 99999);
	pn_json_release(&d);
	/* 200 keys: the sorted duplicate check */
	n = (size_t)sprintf(s, "{");
	for (i = 0; i < 200; i++)
		n += (size_t)sprintf(s + n, "%s\"k%d\":%d", i ? "," : "", i, i);
	strcpy(s + n, "}");
	CHECK(!parse(&d, s));
	CHECK(!pn_json_int(pn_json_get(d.root, "k150"), &v) && v == 150);
	pn_json_release(&d);
	strcpy(s + n, ",\"k17\":0}");
	CHECK(refuses(s, "duplicate key 'k17'"));
	free(s);
}

TEST(files)
{
	struct pn_json_doc d;
	char path[] = "/tmp/penny-t-json.XXXXXX";
	int fd = mkstemp(path), ret;

	CHECK(fd >= 0);
	CHECK(write(fd, "{\"x\": [1, 2]}", 13) == 13);
	close(fd);
	CHECK(!pn_json_parse_file(&d, path));
	CHECK(pn_json_len(pn_json_get(d.root, "x")) == 2);
	pn_json_release(&d);
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(write(fd, "{\"x\": }", 7) == 7);
	close(fd);
	ret = pn_json_parse_file(&d, path);
	CHECK(ret == -EINVAL && strstr(pn_errmsg(ret), path) &&
	      strstr(pn_errmsg(ret), "line 1 column 7"));
	unlink(path);
	ret = pn_json_parse_file(&d, path);
	CHECK(ret == -ENOENT && strstr(pn_errmsg(ret), "cannot open"));
}

TEST(type_names)
{
	CHECK_STR(pn_json_type_name(PN_JSON_OBJECT), "object");
	CHECK_STR(pn_json_type_name(PN_JSON_NUMBER), "number");
}

int main(void)
{
	RUN(values);
	RUN(strings);
	RUN(refused);
	RUN(error_position);
	RUN(depth_limit);
	RUN(large_containers);
	RUN(files);
	RUN(type_names);
	return unit_done();
}
