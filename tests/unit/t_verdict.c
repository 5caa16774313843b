/* SPDX-License-Identifier: MIT */
/*
 * Check results (src/base/verdict.h): the exit code rule, the bounds of
 * the list, and its four presentations read back: the text table, JSON
 * (minijson), JUnit XML (libxml2 through pn_xml_parse) and the Prometheus
 * textfile (line by line here, and tests/helpers/top/check_prom.py when
 * python3 is there).
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/minijson.h"
#include "base/out.h"
#include "base/verdict.h"
#include "base/xml.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

/* A target name with every XML special character, a control character, a
 * tab, a Prometheus escape and an invalid UTF-8 byte. */
#define NASTY "p<&\"'\x01q\\r\tz\xff"

static struct pn_verdict_list *sample(void)
{
	struct pn_verdict_list *l = pn_verdict_list_new();

	pn_verdict_add(l, &(struct pn_verdict_in){
				  .check = "nic-bw", .node = "n1", .target = "mlx5_0/1",
				  .verdict = PN_PASS, .measured = PN_VNUM(371.5),
				  .expected = PN_VNUM(360), .unit = "Gb/s",
				  .source = "topology: port rate 400 Gb/s x 90%", .seconds = 2.5 });
	pn_verdict_add(l, &(struct pn_verdict_in){
				  .check = "nic-bw", .node = "n1", .target = "mlx5_1/1",
				  .verdict = PN_FAIL, .measured = PN_VNUM(355.25),
				  .expected = PN_VNUM(360), .unit = "Gb/s",
				  .source = "topology: port rate 400 Gb/s x 90%",
				  .detail = "below the expected rate" });
	pn_verdict_add(l, &(struct pn_verdict_in){
				  .check = "pcie", .node = "n1", .target = "GPU0",
				  .verdict = PN_PASS, .measured = PN_VTEXT("x16 Gen5"),
				  .expected = PN_VTEXT("x16 Gen5"), .source = "config" });
	pn_verdict_add(l, &(struct pn_verdict_in){ .check = "gpu-copy", .node = "n1",
						   .target = "GPU0", .verdict = PN_SKIP,
						   .detail = "no GPU plugin" });
	return l;
}

static int add(struct pn_verdict_list *l, const char *target, enum pn_verdict v)
{
	return pn_verdict_add(l, &(struct pn_verdict_in){ .check = "c", .node = "n",
							  .target = target, .verdict = v,
							  .detail = "why" });
}

TEST(exit_code_rule)
{
	struct pn_verdict_list *l = pn_verdict_list_new();

	CHECK_EQ_INT(pn_verdict_exit_code(l), 2);	/* nothing ran */
	add(l, "s1", PN_SKIP);
	CHECK_EQ_INT(pn_verdict_exit_code(l), 2);	/* only skips: nothing could run */
	add(l, "p1", PN_PASS);
	CHECK_EQ_INT(pn_verdict_exit_code(l), 0);	/* skips beside passes */
	add(l, "f1", PN_FAIL);
	CHECK_EQ_INT(pn_verdict_exit_code(l), 1);
	pn_verdict_list_free(l);

	l = pn_verdict_list_new();
	add(l, "p1", PN_PASS);
	add(l, "p2", PN_PASS);
	CHECK_EQ_INT(pn_verdict_exit_code(l), 0);
	pn_verdict_list_free(l);

	l = pn_verdict_list_new();
	add(l, "s1", PN_SKIP);
	add(l, "f1", PN_FAIL);
	CHECK_EQ_INT(pn_verdict_exit_code(l), 1);	/* a failure beats nothing-ran */
	CHECK_EQ_INT(pn_verdict_count(l, PN_FAIL), 1);
	CHECK_EQ_INT(pn_verdict_count(l, PN_SKIP), 1);
	CHECK_EQ_INT(pn_verdict_count(l, PN_PASS), 0);
	pn_verdict_list_free(l);
}

TEST(add_refuses_bad_results)
{
	struct pn_verdict_list *l = pn_verdict_list_new();

	CHECK_EQ_INT(pn_verdict_add(l, &(struct pn_verdict_in){ .check = "c", .node = "n",
								.verdict = PN_PASS }),
		     -EINVAL);
	CHECK_EQ_INT(pn_verdict_add(l, &(struct pn_verdict_in){ .check = "", .node = "n",
								.target = "t" }),
		     -EINVAL);
	/* a check that cannot run says why */
	CHECK_EQ_INT(pn_verdict_add(l, &(struct pn_verdict_in){ .check = "c", .node = "n",
								.target = "t",
								.verdict = PN_SKIP }),
		     -EINVAL);
	CHECK_EQ_INT(pn_verdict_add(l, &(struct pn_verdict_in){ .check = "c", .node = "n",
								.target = "t",
								.verdict = PN_VERDICT_COUNT }),
		     -EINVAL);
	CHECK_EQ_INT(add(l, "t", PN_PASS), 0);
	CHECK_EQ_INT(add(l, "t", PN_FAIL), -EEXIST);
	CHECK_EQ_INT(pn_verdict_n(l), 1);
	CHECK_EQ_INT(pn_verdict_count(l, PN_FAIL), 0);
	CHECK(pn_verdict_at(l, 1) == NULL);
	CHECK(pn_verdict_at(l, -1) == NULL);
	CHECK_STR(pn_verdict_name(PN_SKIP), "SKIP");
	CHECK_STR(pn_verdict_name(PN_VERDICT_COUNT), "?");
	pn_verdict_list_free(l);
}

TEST(list_is_bounded)
{
	struct pn_verdict_list *l = pn_verdict_list_new();
	char name[32], long_name[400];
	const struct pn_verdict_result *r;
	int i, rc;

	for (i = 0; i < PN_VERDICT_MAX; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		if (add(l, name, PN_PASS))
			break;
	}
	CHECK_EQ_INT(pn_verdict_n(l), PN_VERDICT_MAX);
	/* past the cap: counted, not kept; a dropped failure still fails the run */
	CHECK_EQ_INT(add(l, "late-fail", PN_FAIL), -ENOSPC);
	CHECK_EQ_INT(pn_verdict_n(l), PN_VERDICT_MAX);
	CHECK_EQ_INT(pn_verdict_dropped(l), 1);
	CHECK_EQ_INT(pn_verdict_count(l, PN_FAIL), 1);
	CHECK_EQ_INT(pn_verdict_exit_code(l), 1);
	pn_verdict_list_free(l);

	/* long strings are cut to the field, at a character boundary */
	l = pn_verdict_list_new();
	for (i = 0; i + 2 < (int)sizeof(long_name); i += 2)
		memcpy(long_name + i, "\xc3\xa9", 2);	/* U+00E9 */
	long_name[i] = 0;
	rc = pn_verdict_add(l, &(struct pn_verdict_in){ .check = "c", .node = long_name,
							.target = long_name, .verdict = PN_FAIL,
							.detail = long_name,
							.measured = PN_VTEXT(long_name) });
	CHECK_EQ_INT(rc, 0);
	r = pn_verdict_at(l, 0);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_INT(strlen(r->target), PN_VERDICT_NAME - 2);	/* 31 whole é */
		CHECK_EQ_INT(strlen(r->detail), PN_VERDICT_DETAIL - 2);
		CHECK_EQ_INT(strlen(r->measured.text), PN_VERDICT_VAL - 2);
		CHECK(!memcmp(r->target, long_name, strlen(r->target)));
	}
	/* a second result whose name differs only past the cut is the same series */
	long_name[200] = 'x';
	CHECK_EQ_INT(pn_verdict_add(l, &(struct pn_verdict_in){ .check = "c", .node = long_name,
								.target = long_name,
								.verdict = PN_PASS }),
		     -EEXIST);
	/* a non-finite number is no number */
	CHECK_EQ_INT(pn_verdict_add(l, &(struct pn_verdict_in){ .check = "c", .node = "n",
								.target = "t", .verdict = PN_PASS,
								.measured = PN_VNUM(NAN) }),
		     0);
	r = pn_verdict_at(l, 1);
	CHECK(r && r->measured.kind == PN_VAL_NONE);
	pn_verdict_list_free(l);
}

/* Output of the list through pn_out, in text or JSON, in a malloc'ed string. */
static char *render(const struct pn_verdict_list *l, int json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct pn_out *o = f ? pn_out_new(f, json) : NULL;

	if (!o) {
		if (f)
			fclose(f);
		return NULL;
	}
	pn_out_open_object(o, NULL);
	pn_verdict_write_out(o, l);
	pn_out_close_object(o);
	pn_out_free(o);
	fclose(f);
	return buf;
}

TEST(text_table)
{
	struct pn_verdict_list *l = sample();
	char *t = render(l, 0);

	CHECK(t != NULL);
	if (!t)
		return;
	/* columns line up; a FAIL says why and where its expectation came from,
	 * a SKIP why it could not run */
	CHECK_STR(t,
		  "CHECK     NODE  TARGET    MEASURED     EXPECTED  VERDICT\n"
		  "nic-bw    n1    mlx5_0/1  371.5 Gb/s   360 Gb/s  PASS\n"
		  "nic-bw    n1    mlx5_1/1  355.25 Gb/s  360 Gb/s  FAIL  below the expected rate "
		  "(expected from topology: port rate 400 Gb/s x 90%)\n"
		  "pcie      n1    GPU0      x16 Gen5     x16 Gen5  PASS\n"
		  "gpu-copy  n1    GPU0      -            -         SKIP  no GPU plugin\n"
		  "2 passed, 1 failed, 1 skipped\n");
	free(t);

	/* names from the system are shown escaped, the columns still line up */
	pn_verdict_add(l, &(struct pn_verdict_in){ .check = "rails", .node = "n\x1b[2J",
						   .target = "t", .verdict = PN_PASS });
	t = render(l, 0);
	CHECK(t && strstr(t, "CHECK     NODE      TARGET    MEASURED"));
	CHECK(t && strstr(t, "\nrails     n\\x1b[2J  t         -            -         PASS\n"));
	CHECK(t && !strchr(t, 0x1b));
	free(t);
	pn_verdict_list_free(l);
}

static const char *jstr(const struct pn_jval *o, const char *key)
{
	const char *s = pn_json_str(pn_json_get(o, key));

	return s ? s : "(not a string)";
}

static double jnum(const struct pn_jval *o, const char *key)
{
	double x = -1;

	if (pn_json_num(pn_json_get(o, key), &x))
		return -12345;
	return x;
}

static int jnull(const struct pn_jval *o, const char *key)
{
	const struct pn_jval *v = pn_json_get(o, key);

	return v && v->type == PN_JSON_NULL;
}

TEST(json_output)
{
	static const char *const keys[] = { "check",    "node",	     "target",
					    "measured", "measured_text", "unit",
					    "expected", "expected_text", "source",
					    "verdict",  "detail",	     "seconds" };
	struct pn_verdict_list *l = sample();
	char *t = render(l, 1);
	const struct pn_jval *res, *r, *sum;
	struct pn_json_doc doc;
	unsigned i, k;

	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_INT(pn_json_parse(&doc, t, strlen(t)), 0);
	res = pn_json_get(doc.root, "results");
	CHECK_EQ_INT(pn_json_len(res), 4);
	for (i = 0; i < pn_json_len(res); i++) {
		CHECK_EQ_INT(pn_json_len(pn_json_at(res, i)), 12);
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			CHECK(pn_json_get(pn_json_at(res, i), keys[k]) != NULL);
	}
	r = pn_json_at(res, 1);
	CHECK_STR(jstr(r, "check"), "nic-bw");
	CHECK_STR(jstr(r, "node"), "n1");
	CHECK_STR(jstr(r, "target"), "mlx5_1/1");
	CHECK(jnum(r, "measured") == 355.25 && jnull(r, "measured_text"));
	CHECK_EQ_INT((int)jnum(doc.root, "version"), 1);
	CHECK(jnum(r, "expected") == 360);
	CHECK_STR(jstr(r, "unit"), "Gb/s");
	CHECK_STR(jstr(r, "source"), "topology: port rate 400 Gb/s x 90%");
	CHECK_STR(jstr(r, "verdict"), "FAIL");
	CHECK_STR(jstr(r, "detail"), "below the expected rate");
	CHECK(jnull(r, "seconds"));
	CHECK(jnum(pn_json_at(res, 0), "seconds") == 2.5);
	CHECK(jnull(pn_json_at(res, 0), "detail"));
	r = pn_json_at(res, 2);
	/* typed: a number or null; text in measured_text */
	CHECK(jnull(r, "measured"));
	CHECK_STR(jstr(r, "measured_text"), "x16 Gen5");
	CHECK(jnull(r, "unit"));
	r = pn_json_at(res, 3);
	CHECK_STR(jstr(r, "verdict"), "SKIP");
	CHECK(jnull(r, "measured") && jnull(r, "expected") && jnull(r, "source"));
	CHECK_STR(jstr(r, "detail"), "no GPU plugin");
	sum = pn_json_get(doc.root, "summary");
	CHECK(jnum(sum, "pass") == 2 && jnum(sum, "fail") == 1 && jnum(sum, "skip") == 1);
	CHECK(jnum(sum, "dropped") == 0 && jnum(sum, "exit") == 1);
	pn_json_release(&doc);
	free(t);
	pn_verdict_list_free(l);
}

static char *junit(const struct pn_verdict_list *l, const char *suite, const char *host)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (pn_verdict_write_junit(f, suite, host, l, NULL)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static const char *xattr(const xmlNode *n, const char *name)
{
	const char *v = n ? pn_xml_attr(n, name) : NULL;

	return v ? v : "(none)";
}

/* The next element at or after n (skipping text). */
static xmlNode *elem(xmlNode *n)
{
	while (n && n->type != XML_ELEMENT_NODE)
		n = n->next;
	return n;
}

static int is(const xmlNode *n, const char *name)
{
	return n && !strcmp((const char *)n->name, name);
}

TEST(junit_output)
{
	struct pn_verdict_list *l = sample();
	struct pn_xml_error e;
	xmlNode *root, *suite, *tc, *child;
	xmlDocPtr d;
	char *x;
	int n = 0;

	/* the nasty name and reason go into attributes and the failure text */
	pn_verdict_add(l, &(struct pn_verdict_in){ .check = "rails<&>", .node = "n1",
						   .target = NASTY, .verdict = PN_FAIL,
						   .measured = PN_VTEXT(NASTY),
						   .source = "<config & \"baseline\">",
						   .detail = "a\tb\nc & <d> \x02" });
	x = junit(l, "penny check \"ci\"", "n1&<>");
	CHECK(x != NULL);
	if (!x)
		return;
	d = pn_xml_parse(x, strlen(x), &e);
	CHECK(d != NULL);
	if (!d) {
		printf("# %s\n%s", e.msg, x);
		free(x);
		return;
	}
	root = xmlDocGetRootElement(d);
	CHECK(is(root, "testsuites"));
	CHECK_STR(xattr(root, "tests"), "5");
	CHECK_STR(xattr(root, "failures"), "2");
	CHECK_STR(xattr(root, "skipped"), "1");
	CHECK_STR(xattr(root, "errors"), "0");
	suite = root ? elem(root->children) : NULL;
	CHECK(is(suite, "testsuite"));
	CHECK(suite && !elem(suite->next));	/* one suite */
	CHECK_STR(xattr(suite, "name"), "penny check \"ci\"");
	CHECK_STR(xattr(suite, "hostname"), "n1&<>");
	CHECK_STR(xattr(suite, "tests"), "5");
	CHECK_STR(xattr(suite, "failures"), "2");
	CHECK_STR(xattr(suite, "skipped"), "1");
	CHECK_STR(xattr(suite, "errors"), "0");
	CHECK_STR(xattr(suite, "time"), "2.500");
	for (tc = suite ? elem(suite->children) : NULL; tc; tc = elem(tc->next), n++) {
		CHECK(is(tc, "testcase"));
		CHECK(pn_xml_attr(tc, "classname") && pn_xml_attr(tc, "name") &&
		      pn_xml_attr(tc, "time"));
		child = elem(tc->children);
		switch (n) {
		case 0:
		case 2:
			CHECK(child == NULL);	/* a pass */
			break;
		case 1:
			CHECK_STR(xattr(tc, "classname"), "nic-bw");
			CHECK_STR(xattr(tc, "name"), "n1:mlx5_1/1");
			CHECK(is(child, "failure"));
			CHECK_STR(xattr(child, "message"), "below the expected rate");
			break;
		case 3:
			CHECK(is(child, "skipped"));
			CHECK_STR(xattr(child, "message"), "no GPU plugin");
			break;
		case 4: {
			xmlChar *body = child ? xmlNodeGetContent(child) : NULL;

			CHECK_STR(xattr(tc, "classname"), "rails<&>");
			/* the control character and the invalid byte become U+FFFD,
			 * the tab stays a tab */
			CHECK_STR(xattr(tc, "name"), "n1:p<&\"'\xef\xbf\xbdq\\r\tz\xef\xbf\xbd");
			CHECK(is(child, "failure"));
			CHECK_STR(xattr(child, "message"), "a\tb\nc & <d> \xef\xbf\xbd");
			CHECK(body && strstr((const char *)body,
					     "measured: p<&\"'\xef\xbf\xbdq\\r\tz\xef\xbf\xbd\n"));
			CHECK(body && strstr((const char *)body,
					     "source: <config & \"baseline\">\n"));
			xmlFree(body);
			break;
		}
		}
	}
	CHECK_EQ_INT(n, 5);
	xmlFreeDoc(d);
	free(x);
	pn_verdict_list_free(l);

	/* an empty run is still a valid document, and an error: nothing was judged */
	l = pn_verdict_list_new();
	x = junit(l, NULL, NULL);
	d = x ? pn_xml_parse(x, strlen(x), &e) : NULL;
	CHECK(d != NULL);
	CHECK_STR(xattr(d ? xmlDocGetRootElement(d) : NULL, "tests"), "1");
	CHECK_STR(xattr(d ? xmlDocGetRootElement(d) : NULL, "errors"), "1");
	CHECK(x && strstr(x, "<error message=\"nothing was judged: no check result\" type=\"ERROR\"/>"));
	if (d)
		xmlFreeDoc(d);
	free(x);
	/* every result a SKIP: exit 2, so an error too, beside the skips */
	CHECK_EQ_INT(add(l, "GPU0", PN_SKIP), 0);
	x = junit(l, "penny check", "n1");
	d = x ? pn_xml_parse(x, strlen(x), &e) : NULL;
	CHECK(d != NULL);
	CHECK(x && strstr(x, "tests=\"2\" failures=\"0\" errors=\"1\" skipped=\"1\""));
	CHECK(x && strstr(x, "<testcase classname=\"penny check\" name=\"n1:run\" time=\"0.000\">\n"
			  "      <error message=\"nothing was judged: every check was skipped\""));
	if (d)
		xmlFreeDoc(d);
	free(x);
	pn_verdict_list_free(l);
	/* a run that could not run: its reason, escaped; no list at all */
	x = NULL;
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		CHECK(f && pn_verdict_write_junit(f, "penny check", "h\x01<", NULL,
						  "x.conf:3: bad \xff\"value\"\n") == 0);
		if (f)
			fclose(f);
		x = buf;
	}
	d = x ? pn_xml_parse(x, strlen(x), &e) : NULL;
	CHECK(d != NULL);
	CHECK(x && strstr(x, "tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\""));
	CHECK(x && strstr(x, "name=\"h\xef\xbf\xbd&lt;:run\""));
	CHECK(x && strstr(x, "message=\"x.conf:3: bad \xef\xbf\xbd&quot;value&quot;&#10;\""));
	if (d)
		xmlFreeDoc(d);
	free(x);
}

static char *prom(const struct pn_verdict_list *l)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (pn_verdict_write_prom(f, l, -1)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static int name_char(int c, int first)
{
	return isalpha(c) || c == '_' || c == ':' || (!first && isdigit(c));
}

/*
 * One sample line "name{k="v",...} value" (or "name value"); the name into
 * name[len].  Label values may hold only the escapes \\, \" and \n.
 */
static int sample_line(const char *s, char *name, size_t len)
{
	const char *p = s;
	char *end;

	while (name_char((unsigned char)*p, p == s))
		p++;
	if (p == s || (size_t)(p - s) >= len)
		return 0;
	snprintf(name, len, "%.*s", (int)(p - s), s);
	if (*p == '{') {
		p++;
		while (*p != '}') {
			const char *k = p;

			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
			if (p == k || p[0] != '=' || p[1] != '"')
				return 0;
			for (p += 2; *p != '"'; p++) {
				if (!*p)
					return 0;
				if (*p == '\\' && !strchr("\\\"n", *++p))
					return 0;
			}
			p++;
			if (*p == ',')
				p++;
			else if (*p != '}')
				return 0;
		}
		p++;
	}
	if (*p++ != ' ')
		return 0;
	strtod(p, &end);
	return end != p && !*end;
}

TEST(prom_output)
{
	struct pn_verdict_list *l = sample();
	char *t, *line, *save = NULL, name[128], seen[16][64], typed[64] = "", checker[512];
	int nseen = 0, i, samples = 0, bad = 0;

	pn_verdict_add(l, &(struct pn_verdict_in){ .check = "rails", .node = "n1",
						   .target = "a\"b\\c\nd", .verdict = PN_PASS,
						   .measured = PN_VNUM(1.5), .unit = "x" });
	t = prom(l);
	CHECK(t != NULL);
	if (!t)
		return;
	for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char help[64];

		if (sscanf(line, "# HELP %63s ", help) == 1) {
			/* a family is announced once, HELP then TYPE */
			for (i = 0; i < nseen; i++)
				bad += !strcmp(seen[i], help);
			if (nseen < 16)
				snprintf(seen[nseen++], sizeof(seen[0]), "%s", help);
			typed[0] = 0;
			continue;
		}
		if (sscanf(line, "# TYPE %63s gauge", typed) == 1) {
			bad += !nseen || strcmp(typed, seen[nseen - 1]);
			continue;
		}
		if (!strncmp(line, "# penny: ", 9))	/* a comment: what was left out */
			continue;
		if (!sample_line(line, name, sizeof(name))) {
			printf("# not a sample line: %s\n", line);
			bad++;
			continue;
		}
		/* the sample belongs to the family just announced (HELP and TYPE) */
		if (strcmp(name, typed)) {
			printf("# %s without its HELP and TYPE\n", name);
			bad++;
		}
		samples++;
	}
	free(t);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(nseen, 8);
	CHECK_EQ_INT(samples, 4 + 1 + 2 + 2 + 3 + 1 + 1 + 1);

	t = prom(l);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(strstr(t, "penny_check_result{check=\"nic-bw\",node=\"n1\",target=\"mlx5_1/1\"} 0\n"));
	CHECK(strstr(t, "penny_check_result{check=\"nic-bw\",node=\"n1\",target=\"mlx5_0/1\"} 1\n"));
	CHECK(strstr(t, "penny_check_skipped{check=\"gpu-copy\",node=\"n1\",target=\"GPU0\"} 1\n"));
	CHECK(!strstr(t, "penny_check_result{check=\"gpu-copy\""));
	/* base units in the name, no unit label: 355.25 Gb/s in bytes per second */
	CHECK(strstr(t, "penny_check_measured_bytes_per_second{check=\"nic-bw\",node=\"n1\","
			"target=\"mlx5_1/1\"} 44406250000\n"));
	CHECK(strstr(t, "penny_check_expected_bytes_per_second{check=\"nic-bw\",node=\"n1\","
			"target=\"mlx5_1/1\"} 45000000000\n"));
	CHECK(!strstr(t, "unit="));
	CHECK(!strstr(t, "penny_check_measured{check=\"pcie\""));	/* text: no sample */
	/* a unit without a base unit: a comment (names escaped), no sample */
	CHECK(strstr(t, "# penny: rails a\\\"b\\\\c\\nd: unit \"x\" has no Prometheus base unit, "
			"not exported\n"));
	CHECK(!strstr(t, "} 1.5\n"));
	CHECK(strstr(t, "penny_check_last_run_timestamp_seconds "));
	CHECK(strstr(t, "penny_check_results{verdict=\"FAIL\"} 1\n"));
	CHECK(strstr(t, "penny_check_exit_code 1\n"));

	/* the run's own exit code beats the list's; no list at all is an empty run */
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		CHECK(f && pn_verdict_write_prom(f, l, 2) == 0);
		if (f)
			fclose(f);
		CHECK(buf && strstr(buf, "penny_check_exit_code 2\n"));
		free(buf);
		buf = NULL;
		f = open_memstream(&buf, &len);
		CHECK(f && pn_verdict_write_prom(f, NULL, 2) == 0);
		if (f)
			fclose(f);
		CHECK(buf && strstr(buf, "penny_check_exit_code 2\n"));
		CHECK(buf && strstr(buf, "penny_check_results{verdict=\"PASS\"} 0\n"));
		free(buf);
	}

	/* the project's strict text-format checker agrees, when it can run */
	snprintf(checker, sizeof(checker), "%s/tests/helpers/top/check_prom.py",
		 getenv("TOP") ? getenv("TOP") : ".");
	if (!access(checker, R_OK) && !system("python3 -c '' 2>/dev/null")) {
		char path[] = "/tmp/t_verdict.XXXXXX", cmd[1024];
		int fd = mkstemp(path);

		CHECK(fd >= 0);
		if (fd >= 0) {
			CHECK(write(fd, t, strlen(t)) == (ssize_t)strlen(t));
			close(fd);
			snprintf(cmd, sizeof(cmd),
				 "python3 %s %s --expect 'penny_check_exit_code=1' >/dev/null",
				 checker, path);
			CHECK_EQ_INT(system(cmd), 0);
			unlink(path);
		}
	} else {
		printf("# python3 or %s missing: not run\n", checker);
	}
	free(t);
	pn_verdict_list_free(l);
}

int main(void)
{
	RUN(exit_code_rule);
	RUN(add_refuses_bad_results);
	RUN(list_is_bounded);
	RUN(text_table);
	RUN(json_output);
	RUN(junit_output);
	RUN(prom_output);
	return unit_done();
}
