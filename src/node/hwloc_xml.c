/* SPDX-License-Identifier: MIT */
/*
 * hwloc XML documents before hwloc reads them: the version probe, the
 * well-formedness check and the hwloc 3 -> 2 conversion (node/topo.h),
 * all on the one XML reader (base/xml.h, libxml2).
 */
#include "node/topo.h"
#include "base/log.h"
#include "base/xml.h"

#include <errno.h>
#include <libxml/xmlsave.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pn_topo_xml_version(const char *buf, size_t len)
{
	char name[32], val[32];
	int has, v;

	if (!pn_xml_first_element(buf, len, "version", name, sizeof(name), val, sizeof(val), &has) ||
	    strcmp(name, "topology"))
		return -1;
	if (!has)
		return 1;
	v = atoi(val);
	return v > 0 ? v : -1;
}

/* Markup the converter never met in hwloc's XML, refused as before libxml2. */
static int odd_markup(const xmlNode *n)
{
	for (; n; n = n->next) {
		int line = pn_xml_line(n);

		if (n->type == XML_CDATA_SECTION_NODE)
			return pn_err(-EINVAL, "malformed XML at line %d: unexpected markup declaration",
				      line);
		if (n->type == XML_PI_NODE && n->content && strchr((const char *)n->content, '>'))
			return pn_err(-EINVAL,
				      "malformed XML at line %d: '>' inside a processing instruction",
				      line ? line : 1);
		if (n->type == XML_ELEMENT_NODE && odd_markup(n->children))
			return -EINVAL;
	}
	return 0;
}

static int parse(const char *in, size_t len, xmlDocPtr *doc)
{
	struct pn_xml_error e;
	const char *why;

	*doc = pn_xml_parse(in, len, &e);
	if (*doc)
		return 0;
	why = pn_xml_why(&e, in, len);
	if (e.code == PN_XML_E_NOMEM)
		return pn_err(-ENOMEM, "out of memory");
	if (!strcmp(why, "no root element"))
		return pn_err(-EINVAL, "malformed XML: no root element");
	return pn_err(-EINVAL, "malformed XML at line %d: %s", e.line, why);
}

int pn_topo_xml_check(const char *in, size_t len)
{
	xmlDocPtr doc;
	int ret = parse(in, len, &doc);

	if (ret)
		return ret;
	ret = odd_markup(doc->children);
	xmlFreeDoc(doc);
	return ret;
}

/* hwloc 3 OS device type flags to the hwloc 2 enum. */
static int osdev_v3_to_v2(unsigned long v3)
{
	if (v3 & 32)
		return 3; /* OpenFabrics (also flagged Network) */
	if (v3 & 8)
		return 5; /* CoProc (CUDA, OpenCL: also flagged GPU) */
	if (v3 & 4)
		return 1; /* GPU */
	if (v3 & 16)
		return 2; /* Network */
	if (v3 & 64)
		return 4; /* DMA */
	return 0;	  /* Storage, Memory: Block */
}

static int is(const xmlNode *n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

static int blank(const xmlNode *n)
{
	return n && n->type == XML_TEXT_NODE && xmlIsBlankNode(n);
}

/* Unlink and free n with the white space before it (its indentation). */
static void drop(xmlNodePtr n)
{
	if (blank(n->prev)) {
		xmlNodePtr ws = n->prev;

		xmlUnlinkNode(ws);
		xmlFreeNode(ws);
	}
	xmlUnlinkNode(n);
	xmlFreeNode(n);
}

/* Comments go everywhere: hwloc's own XML parser does not accept them. */
static void drop_comments(xmlNodePtr n)
{
	while (n) {
		xmlNodePtr next = n->next;

		if (n->type == XML_COMMENT_NODE)
			drop(n);
		else if (n->type == XML_ELEMENT_NODE)
			drop_comments(n->children);
		n = next;
	}
}

/* An <object> for hwloc 2: osdev_type from v3 flags, gp_index from id where missing. */
static int object_v2(xmlNodePtr o)
{
	const char *t = pn_xml_attr(o, "osdev_type"), *id = pn_xml_attr(o, "id");
	char tmp[32];

	if (t) {
		snprintf(tmp, sizeof(tmp), "%d", osdev_v3_to_v2(strtoul(t, NULL, 10)));
		if (!xmlSetProp(o, BAD_CAST "osdev_type", BAD_CAST tmp))
			return -ENOMEM;
	}
	if (!xmlHasProp(o, BAD_CAST "gp_index") && id && strlen(id) > 3 &&
	    !strncmp(id, "obj", 3) && strlen(id + 3) < 20 &&
	    !xmlSetProp(o, BAD_CAST "gp_index", BAD_CAST(id + 3)))
		return -ENOMEM;
	return 0;
}

static int objects_v2(xmlNodePtr n)
{
	for (; n; n = n->next)
		if (is(n, "object") && (object_v2(n) || objects_v2(n->children)))
			return -ENOMEM;
	return 0;
}

/* Link n before ref (at the end of parent without one); libxml2's own calls merge text nodes. */
static void link_before(xmlNodePtr parent, xmlNodePtr ref, xmlNodePtr n)
{
	n->parent = parent;
	n->next = ref;
	n->prev = ref ? ref->prev : parent->last;
	if (n->prev)
		n->prev->next = n;
	else
		parent->children = n;
	if (ref)
		ref->prev = n;
	else
		parent->last = n;
}

/* Insert a text node and a copy of el (its attributes only) before ref. */
static int put(xmlNodePtr parent, xmlNodePtr ref, const char *text, xmlNodePtr el)
{
	xmlNodePtr t = xmlNewDocText(parent->doc, BAD_CAST text), c = NULL;

	if (t && el)
		c = xmlDocCopyNode(el, parent->doc, 2);
	if (!t || (el && !c)) {
		xmlFreeNode(t);
		return -ENOMEM;
	}
	link_before(parent, ref, t);
	if (c)
		link_before(parent, ref, c);
	return 0;
}

/*
 * The top level: the root's <info/> move into its first <object> (before
 * its children), <pci_locality> goes, <topology> is version 2.0.
 */
static int top_v2(xmlNodePtr top)
{
	xmlNodePtr n, next, obj = NULL, infos = NULL, last = NULL, first;
	int ret = 0;

	for (n = top->children; n; n = next) {
		next = n->next;
		if (is(n, "object") && !obj)
			obj = n;
		if (!is(n, "info") && !is(n, "pci_locality"))
			continue;
		if (blank(n->prev)) {
			xmlNodePtr ws = n->prev;

			xmlUnlinkNode(ws);
			xmlFreeNode(ws);
		}
		xmlUnlinkNode(n);
		if (is(n, "info")) { /* kept in order, on their own list */
			n->next = NULL;
			if (last)
				last->next = n;
			else
				infos = n;
			last = n;
		} else {
			xmlFreeNode(n);
		}
	}
	if (obj && infos) {
		first = obj->children;
		for (n = infos; n && !ret; n = n->next)
			ret = put(obj, first, "\n    ", n);
		if (!ret && !first)
			ret = put(obj, NULL, "\n  ", NULL);
	}
	while (infos) {
		next = infos->next;
		infos->next = NULL;
		xmlFreeNode(infos);
		infos = next;
	}
	if (ret)
		return ret;
	if (is(top, "topology")) {
		while (top->properties)
			xmlRemoveProp(top->properties);
		if (!xmlSetProp(top, BAD_CAST "version", BAD_CAST "2.0"))
			return -ENOMEM;
	}
	return objects_v2(top->children);
}

/* Did the document open with an XML declaration (written again only then)? */
static int has_decl(const char *in, size_t len)
{
	if (len >= 3 && !memcmp(in, "\xef\xbb\xbf", 3)) {
		in += 3;
		len -= 3;
	}
	return len > 5 && !memcmp(in, "<?xml", 5) && strchr(" \t\r\n", in[5]);
}

int pn_topo_xml_downgrade(const char *in, size_t len, char **out, size_t *outlen)
{
	xmlBufferPtr buf = NULL;
	xmlSaveCtxtPtr save = NULL;
	xmlDocPtr doc;
	char *p;
	int ret = parse(in, len, &doc);

	if (ret)
		return ret;
	drop_comments(doc->children);
	ret = top_v2(xmlDocGetRootElement(doc));
	if (!ret) {
		buf = xmlBufferCreate();
		save = buf ? xmlSaveToBuffer(buf, NULL, has_decl(in, len) ? 0 : XML_SAVE_NO_DECL)
			   : NULL;
		if (!save || xmlSaveDoc(save, doc) < 0)
			ret = -ENOMEM;
		if (save && xmlSaveClose(save) < 0)
			ret = -ENOMEM;
	}
	xmlFreeDoc(doc);
	if (!ret) {
		p = malloc((size_t)xmlBufferLength(buf) + 1);
		if (p) {
			memcpy(p, xmlBufferContent(buf), (size_t)xmlBufferLength(buf));
			p[xmlBufferLength(buf)] = 0;
			*out = p;
			*outlen = (size_t)xmlBufferLength(buf);
		} else {
			ret = -ENOMEM;
		}
	}
	if (buf)
		xmlBufferFree(buf);
	return ret == -ENOMEM ? pn_err(-ENOMEM, "out of memory") : ret;
}
