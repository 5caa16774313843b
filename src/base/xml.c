/* SPDX-License-Identifier: MIT */
/*
 * The one XML reader (libxml2, settings for untrusted input): see xml.h.
 */
#include "base/xml.h"
#include "base/util.h"

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* No network, no DTD loading or validation, no entity expansion (no XML_PARSE_NOENT), no HUGE. */
#define PN_XML_OPTIONS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES)

struct state {
	struct pn_xml_error *err;
	internalSubsetSAXFunc subset;
	int stopped;
};

static void keep_first(void *data, xmlErrorPtr e)
{
	xmlParserCtxtPtr c = data;
	struct state *s = c ? c->_private : NULL;
	struct pn_xml_error *err;
	size_t k;

	if (!s || !e || e->level != XML_ERR_FATAL || s->err->code)
		return;
	err = s->err;
	err->code = e->code;
	err->line = e->line;
	err->int1 = e->int1;
	snprintf(err->name, sizeof(err->name), "%s", e->str1 ? e->str1 : "");
	snprintf(err->msg, sizeof(err->msg), "%s", e->message ? e->message : "");
	for (k = 0; err->msg[k]; k++)
		if (err->msg[k] == '\n' || err->msg[k] == '\r')
			err->msg[k] = k && err->msg[k + 1] ? ' ' : 0;
	/* libxml2's own advice ("use XML_PARSE_HUGE option") means nothing to a user */
	if (strstr(err->msg, "Excessive depth"))
		snprintf(err->msg, sizeof(err->msg), "elements nested deeper than %d", e->int1);
	if (e->code == XML_ERR_TAG_NOT_FINISHED && e->str1 && e->int1 > 0) {
		err->line = e->int1;
		snprintf(err->msg, sizeof(err->msg), "element <%.40s> is not closed", e->str1);
	}
	if (c->input && c->input->cur && c->input->end) {
		for (k = 0; k < 2 && c->input->cur + k < c->input->end; k++)
			err->next[k] = (char)c->input->cur[k];
		err->next[k] = 0;
	}
}

/* Called once the DOCTYPE's name and external id are read: '[' next opens an internal subset. */
static void no_subset(void *data, const xmlChar *name, const xmlChar *eid, const xmlChar *sid)
{
	xmlParserCtxtPtr c = data;
	struct state *s = c->_private;

	if (c->input && c->input->cur < c->input->end && *c->input->cur == '[') {
		if (!s->err->code) {
			s->err->code = PN_XML_E_SUBSET;
			s->err->line = c->input->line;
			snprintf(s->err->msg, sizeof(s->err->msg), "a DOCTYPE with an internal subset");
		}
		s->stopped = 1;
		xmlStopParser(c);
		return;
	}
	s->subset(data, name, eid, sid);
}

static void init_err(struct pn_xml_error *err)
{
	memset(err, 0, sizeof(*err));
}

xmlDocPtr pn_xml_parse(const char *buf, size_t len, struct pn_xml_error *err)
{
	struct state s = { .err = err };
	xmlParserCtxtPtr c;
	xmlDocPtr doc = NULL;
	const char *nul;

	init_err(err);
	if (len > PN_XML_MAX) {
		err->code = PN_XML_E_SIZE;
		snprintf(err->msg, sizeof(err->msg), "larger than %d MiB", PN_XML_MAX >> 20);
		return NULL;
	}
	nul = len ? memchr(buf, 0, len) : NULL;
	if (nul) {
		err->code = PN_XML_E_NUL;
		err->line = 1;
		for (; buf < nul; buf++)
			err->line += *buf == '\n';
		snprintf(err->msg, sizeof(err->msg), "NUL byte");
		return NULL;
	}
	if (!len) {
		err->code = XML_ERR_DOCUMENT_EMPTY;
		err->line = 1;
		snprintf(err->msg, sizeof(err->msg), "Document is empty");
		return NULL;
	}
	xmlInitParser();
	c = xmlCreateMemoryParserCtxt(buf, (int)len);
	if (!c) {
		err->code = PN_XML_E_NOMEM;
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return NULL;
	}
	xmlCtxtUseOptions(c, PN_XML_OPTIONS);
	c->_private = &s;
	c->sax->serror = keep_first;
	c->sax->error = NULL;
	c->sax->warning = NULL;
	c->sax->fatalError = NULL;
	s.subset = c->sax->internalSubset;
	c->sax->internalSubset = no_subset;
	xmlParseDocument(c);
	if (c->wellFormed && !s.stopped && c->myDoc && xmlDocGetRootElement(c->myDoc)) {
		doc = c->myDoc;
		c->myDoc = NULL;
	} else if (!err->code) {
		err->code = XML_ERR_DOCUMENT_EMPTY;
		err->line = c->input ? c->input->line : 0;
		snprintf(err->msg, sizeof(err->msg), "no root element");
	}
	if (c->myDoc)
		xmlFreeDoc(c->myDoc);
	c->myDoc = NULL;
	xmlFreeParserCtxt(c);
	return doc;
}

struct first {
	const char *attr;
	char *name, *val;
	size_t nlen, vlen;
	int *has, found;
};

static void first_start(void *data, const xmlChar *local, const xmlChar *prefix,
			const xmlChar *uri, int nns, const xmlChar **ns, int nattr,
			int ndef, const xmlChar **attrs)
{
	xmlParserCtxtPtr c = data;
	struct first *f = c->_private;
	int i;

	if (f->found)
		return;
	f->found = 1;
	snprintf(f->name, f->nlen, "%s", (const char *)local);
	for (i = 0; i < nattr; i++) {
		const xmlChar *const *a = attrs + 5 * i;

		if (!a[1] && !strcmp((const char *)a[0], f->attr)) {
			snprintf(f->val, f->vlen, "%.*s", (int)PN_MIN((size_t)(a[4] - a[3]), (size_t)INT_MAX),
				 (const char *)a[3]);
			*f->has = 1;
		}
	}
	xmlStopParser(c);
}

static void quiet(void *data, xmlErrorPtr e)
{
}

int pn_xml_first_element(const char *buf, size_t len, const char *attr, char *name,
			 size_t nlen, char *val, size_t vlen, int *has)
{
	struct first f = { .attr = attr, .name = name, .val = val, .nlen = nlen, .vlen = vlen,
			   .has = has };
	xmlSAXHandler sax;
	xmlParserCtxtPtr c;

	*name = *val = 0;
	*has = 0;
	if (!len || len > PN_XML_MAX || memchr(buf, 0, len))
		return 0;
	xmlInitParser();
	memset(&sax, 0, sizeof(sax));
	xmlSAXVersion(&sax, 2);
	sax.startElementNs = first_start;
	sax.internalSubset = NULL;
	sax.externalSubset = NULL;
	sax.entityDecl = NULL;
	sax.serror = quiet;
	sax.error = NULL;
	sax.warning = NULL;
	sax.fatalError = NULL;
	/* a push parser that is never told the input ends: a cut document is fine up to the tag */
	c = xmlCreatePushParserCtxt(&sax, NULL, NULL, 0, NULL);
	if (!c)
		return 0;
	xmlCtxtUseOptions(c, PN_XML_OPTIONS);
	c->_private = &f;
	xmlParseChunk(c, buf, (int)len, 0);
	if (c->myDoc)
		xmlFreeDoc(c->myDoc);
	c->myDoc = NULL;
	xmlFreeParserCtxt(c);
	return f.found;
}

int pn_xml_line(const xmlNode *n)
{
	long l = xmlGetLineNo(n);

	return l > 0 && l < INT_MAX ? (int)l : 0;
}

const char *pn_xml_attr(const xmlNode *n, const char *name)
{
	xmlAttrPtr a = xmlHasProp(n, (const xmlChar *)name);

	if (!a || a->type != XML_ATTRIBUTE_NODE)
		return NULL;
	if (!a->children)
		return "";
	if (a->children->type == XML_TEXT_NODE && !a->children->next)
		return (const char *)a->children->content;
	return NULL;
}

const char *pn_xml_why(const struct pn_xml_error *err, const char *buf, size_t len)
{
	size_t i = 0;

	switch (err->code) {
	case XML_ERR_DOCUMENT_END:
		if (err->next[0] == '<' && err->next[1] == '!')
			return "unexpected markup declaration";
		if (err->next[0] == '<' && err->next[1] != '/')
			return "a second root element";
		return "content after the root element";
	case XML_ERR_DOCUMENT_EMPTY:
		while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
			i++;
		return i < len && buf[i] != '<' ? "text before the root element" : "no root element";
	case XML_ERR_TAG_NAME_MISMATCH:
		return "closing tag does not match";
	case XML_ERR_ATTRIBUTE_REDEFINED:
		return "repeated attribute";
	case XML_ERR_ATTRIBUTE_NOT_STARTED:
	case XML_ERR_ATTRIBUTE_WITHOUT_VALUE:
		/* at the end of the input: the document is cut inside a tag */
		return err->next[0] ? "attribute value must be quoted" : "unterminated tag";
	case XML_ERR_LT_IN_ATTRIBUTE:
		return "'<' in an attribute value";
	case XML_ERR_GT_REQUIRED:
	case XML_ERR_ATTRIBUTE_NOT_FINISHED:
	case XML_ERR_LTSLASH_REQUIRED:
		return "unterminated tag";
	case XML_ERR_COMMENT_NOT_FINISHED:
		return "unterminated comment";
	case XML_ERR_HYPHEN_IN_COMMENT:
		return "'--' inside a comment";
	case XML_ERR_PI_NOT_FINISHED:
		return "unterminated processing instruction";
	case XML_ERR_NAME_REQUIRED:
		return err->next[0] ? "expected a name" : "unterminated tag";
	case XML_ERR_SPACE_REQUIRED:
		return err->next[0] ? "attributes must be separated by whitespace" : "unterminated tag";
	case XML_ERR_TAG_NOT_FINISHED:
		return err->msg;
	}
	if (!err->next[0] && err->code > 0)
		return "unterminated tag"; /* the input ends inside markup */
	return err->msg[0] ? err->msg : "not well-formed";
}
