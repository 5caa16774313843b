/* SPDX-License-Identifier: MIT */
/*
 * The one XML reader (src/base/xml.h): libxml2 with settings for untrusted
 * input.  No DTD is loaded and no entity is expanded, an internal DTD subset
 * is refused, the first fatal error is kept with its line.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/xml.h"

#include <libxml/parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parses(const char *s, struct pn_xml_error *e)
{
	xmlDocPtr d = pn_xml_parse(s, strlen(s), e);

	if (d)
		xmlFreeDoc(d);
	return d != NULL;
}

TEST(no_dtd_no_entities)
{
	char dir[] = "/tmp/t_xml.XXXXXX", path[256], doc[512];
	struct pn_xml_error e;
	xmlDocPtr d;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/ext.dtd", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs("<!ENTITY secret \"from the external DTD\">\n", f);
	fclose(f);
	/* an external DTD is not read: its entity stays a bare reference, never expanded */
	snprintf(doc, sizeof(doc), "<!DOCTYPE t SYSTEM \"%s\"><t>&secret;</t>", path);
	d = pn_xml_parse(doc, strlen(doc), &e);
	CHECK(d != NULL);
	if (d) {
		xmlChar *text = xmlNodeGetContent(xmlDocGetRootElement(d));

		CHECK(!text || !strstr((const char *)text, "external"));
		CHECK(!d->extSubset);
		xmlFree(text);
		xmlFreeDoc(d);
	}
	/* an external entity declared inline: the internal subset is refused first */
	snprintf(doc, sizeof(doc), "<!DOCTYPE t [<!ENTITY x SYSTEM \"file://%s\">]><t>&x;</t>", path);
	CHECK(!parses(doc, &e));
	CHECK_EQ_INT(e.code, PN_XML_E_SUBSET);
	CHECK_STR(pn_xml_why(&e, doc, strlen(doc)), "a DOCTYPE with an internal subset");
	/* the classic entity expansion bomb never gets its declarations in */
	CHECK(!parses("<!DOCTYPE t [<!ENTITY a \"aaaa\"><!ENTITY b \"&a;&a;&a;&a;\">]><t>&b;</t>", &e));
	CHECK_EQ_INT(e.code, PN_XML_E_SUBSET);
	/* a DOCTYPE without a subset is fine (hwloc writes one) */
	CHECK(parses("<!DOCTYPE topology SYSTEM \"hwloc2.dtd\"><topology/>", &e));
	unlink(path);
	rmdir(dir);
}

TEST(first_error_and_line)
{
	struct pn_xml_error e;
	const char *s = "<a>\n<b>\n</a>";

	CHECK(!parses(s, &e));
	CHECK_EQ_INT(e.code, XML_ERR_TAG_NAME_MISMATCH);
	CHECK_EQ_INT(e.line, 3);
	CHECK_STR(pn_xml_why(&e, s, strlen(s)), "closing tag does not match");
	{
		/* nesting past libxml2's limit: a message without libxml2's advice */
		size_t k, n = 300;
		char *deep = malloc(n * 7 + 1), *q = deep;

		CHECK(deep != NULL);
		for (k = 0; k < n; k++)
			q += sprintf(q, "<a>");
		for (k = 0; k < n; k++)
			q += sprintf(q, "</a>");
		CHECK(!parses(deep, &e));
		CHECK_STR(pn_xml_why(&e, deep, strlen(deep)), "elements nested deeper than 256");
		free(deep);
	}
	CHECK(!pn_xml_parse("<a>\0</a>", 8, &e));
	CHECK_EQ_INT(e.code, PN_XML_E_NUL);
	CHECK(!pn_xml_parse("", 0, &e));
	CHECK_EQ_INT(e.code, XML_ERR_DOCUMENT_EMPTY);
	CHECK(!pn_xml_parse("<a/>", (size_t)PN_XML_MAX + 1, &e)); /* the length alone is refused */
	CHECK_EQ_INT(e.code, PN_XML_E_SIZE);
}

TEST(first_element)
{
	char name[32], val[32];
	int has;
	/* read up to the first start tag only: the rest may be cut or missing */
	static const char cut[] = "<?xml version=\"1.0\"?>\n<topology version=\"3.0\"><obj";

	CHECK_EQ_INT(pn_xml_first_element(cut, strlen(cut), "version", name, sizeof(name), val,
					  sizeof(val), &has),
		     1);
	CHECK_STR(name, "topology");
	CHECK_STR(val, "3.0");
	CHECK_EQ_INT(has, 1);
	CHECK_EQ_INT(pn_xml_first_element("<graphs>", 8, "version", name, sizeof(name), val,
					  sizeof(val), &has),
		     1);
	CHECK_EQ_INT(has, 0);
	CHECK_EQ_INT(pn_xml_first_element("<graphs versi", 13, "version", name, sizeof(name), val,
					  sizeof(val), &has),
		     0);
	CHECK_EQ_INT(pn_xml_first_element("text", 4, "version", name, sizeof(name), val,
					  sizeof(val), &has),
		     0);
}

int main(void)
{
	RUN(no_dtd_no_entities);
	RUN(first_error_and_line);
	RUN(first_element);
	return unit_done();
}
