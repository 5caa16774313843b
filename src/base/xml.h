/* SPDX-License-Identifier: MIT */
/*
 * The one XML reader: libxml2 with settings for untrusted input, shared by
 * the hwloc XML handling (node/hwloc_xml.c) and the NCCL graph reader
 * (plan/ncclxml.c).  No network, no DTD loading, no entity expansion, no
 * internal DTD subset (so no entity declarations at all), libxml2's default
 * depth and size limits (XML_PARSE_HUGE off), at most PN_XML_MAX bytes.
 *
 * On a malformed document the first fatal error is kept in struct
 * pn_xml_error (line, libxml2 error code, what came next) so that the
 * caller words its own one-line message.
 */
#ifndef PENNY_XML_H
#define PENNY_XML_H

#include <libxml/tree.h>
#include <stddef.h>

#define PN_XML_MAX (64 << 20)

enum {
	PN_XML_E_SUBSET = -1,	/* a DOCTYPE with an internal subset */
	PN_XML_E_NUL = -2,	/* a NUL byte */
	PN_XML_E_SIZE = -3,	/* over PN_XML_MAX */
	PN_XML_E_NOMEM = -4,
};

struct pn_xml_error {
	int code;		/* libxml2's xmlParserErrors, or PN_XML_E_* */
	int line;		/* where it was found (1-based) */
	int int1;		/* libxml2's int1: start line of an unclosed element */
	char name[64];		/* libxml2's str1 (an element name), "" if none */
	char next[3];		/* the input where it was found, "" at the end */
	char msg[128];		/* libxml2's own wording, one line */
};

/*
 * Parse buf[0, len) (need not be NUL-terminated).  Returns the document
 * (xmlFreeDoc it), or NULL with *err filled (len 0: XML_ERR_DOCUMENT_EMPTY).
 */
xmlDocPtr pn_xml_parse(const char *buf, size_t len, struct pn_xml_error *err);

/*
 * The first element of buf and its attribute attr, read as far as the
 * start tag only (buf may be cut after it).  Returns 1 with the element
 * name and the value (or "" when absent, *has = 0) copied, 0 when buf
 * holds no complete first start tag or is not XML up to it.
 */
int pn_xml_first_element(const char *buf, size_t len, const char *attr, char *name,
			 size_t nlen, char *val, size_t vlen, int *has);

/*
 * penny's wording of err (what the hwloc XML check says): "a second root
 * element", "closing tag does not match", ...; buf is the parsed input.
 */
const char *pn_xml_why(const struct pn_xml_error *err, const char *buf, size_t len);

/* Line of a node (for messages); 0 unknown. */
int pn_xml_line(const xmlNode *n);

/* Attribute value of n, or NULL; valid until the document is freed. */
const char *pn_xml_attr(const xmlNode *n, const char *name);

#endif
