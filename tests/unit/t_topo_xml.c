/* SPDX-License-Identifier: MIT */
/*
 * hwloc XML versions: detection, and the v3 -> v2 conversion that lets
 * libhwloc 2.x read XML exported by hwloc 3.x.
 */
#define _GNU_SOURCE
#include "base/log.h"
#include "node/topo.h"
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char v3[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
	"<!-- a comment with <tags> inside -->\n"
	"<topology version=\"3.0\">\n"
	"  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000003\" complete_cpuset=\"0x00000003\" "
	"allowed_cpuset=\"0x00000003\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" "
	"allowed_nodeset=\"0x00000001\" id=\"obj1\">\n"
	"    <info name=\"DMIProductName\" value=\"a &gt; b\"/>\n"
	"    <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000003\" complete_cpuset=\"0x00000003\" "
	"nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" id=\"obj2\" local_memory=\"1000\"/>\n"
	"    <object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
	"nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" id=\"obj3\"/>\n"
	"    <object type=\"PU\" os_index=\"1\" cpuset=\"0x00000002\" complete_cpuset=\"0x00000002\" "
	"nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" id=\"obj4\"/>\n"
	"    <object type=\"Bridge\" id=\"obj5\" gp_index=\"5\" bridge_type=\"0-1\" depth=\"0\" "
	"bridge_pci=\"0000:[00-00]\">\n"
	"      <object type=\"PCIDev\" id=\"obj6\" gp_index=\"6\" pci_busid=\"0000:00:01.0\" "
	"pci_type=\"0207 [15b3:1021] [15b3:0023] 00 00\" pci_link_speed=\"0.0\">\n"
	"        <object type=\"OSDev\" id=\"obj7\" name=\"ib0\" osdev_type=\"16\"/>\n"
	"        <object type=\"OSDev\" id=\"obj8\" name=\"mlx5_0\" osdev_type=\"48\"/>\n"
	"      </object>\n"
	"      <object type=\"PCIDev\" id=\"obj9\" gp_index=\"9\" pci_busid=\"0000:00:02.0\" "
	"pci_type=\"0302 [10de:2335] [10de:18be] a1 00\" pci_link_speed=\"0.0\">\n"
	"        <object type=\"OSDev\" id=\"obj10\" name=\"cuda0\" subtype=\"CUDA\" osdev_type=\"12\"/>\n"
	"        <object type=\"OSDev\" id=\"obj11\" name=\"card0\" osdev_type=\"4\"/>\n"
	"      </object>\n"
	"    </object>\n"
	"  </object>\n"
	"  <support name=\"custom.exported_support\"/>\n"
	"  <info name=\"Backend\" value=\"Linux\"/>\n"
	"  <info name=\"HostName\" value=\"node42\"/>\n"
	"  <pci_locality domain=\"0x0\" bus_min=\"0x0\" bus_max=\"0x0\" cpuset=\"0x00000003\"/>\n"
	"</topology>\n";

static char *downgrade(const char *in)
{
	char *out = NULL;
	size_t len = 0;

	if (pn_topo_xml_downgrade(in, strlen(in), &out, &len))
		return NULL;
	CHECK_EQ_INT(len, strlen(out));
	return out;
}

TEST(version_detection)
{
	const char *v1 = "<?xml version=\"1.0\"?>\n<!DOCTYPE topology SYSTEM \"hwloc.dtd\">\n<topology>\n";

	CHECK_EQ_INT(pn_topo_xml_version(v3, strlen(v3)), 3);
	CHECK_EQ_INT(pn_topo_xml_version(v1, strlen(v1)), 1);
	CHECK_EQ_INT(pn_topo_xml_version("<topology version='2.0'>", 24), 2);
	CHECK_EQ_INT(pn_topo_xml_version("<html><topology version=\"2.0\">", 31), -1);
	CHECK_EQ_INT(pn_topo_xml_version("plain text", 10), -1);
	CHECK_EQ_INT(pn_topo_xml_version("<topology version=\"2.0\"", 23), -1); /* cut */
	CHECK_EQ_INT(pn_topo_xml_version("", 0), -1);
}

TEST(downgrade_rules)
{
	char *out = downgrade(v3);
	const char *root, *info;

	CHECK(out != NULL);
	if (!out)
		return;
	CHECK(strstr(out, "<topology version=\"2.0\">") != NULL);
	CHECK(strstr(out, "version=\"3.0\"") == NULL);
	CHECK(strstr(out, "pci_locality") == NULL);
	/* OS device types: OpenFabrics 3, Network 2, CoProc 5, GPU 1 */
	CHECK(strstr(out, "name=\"mlx5_0\" osdev_type=\"3\"") != NULL);
	CHECK(strstr(out, "name=\"ib0\" osdev_type=\"2\"") != NULL);
	CHECK(strstr(out, "subtype=\"CUDA\" osdev_type=\"5\"") != NULL);
	CHECK(strstr(out, "name=\"card0\" osdev_type=\"1\"") != NULL);
	/* gp_index from id where missing, kept where present */
	CHECK(strstr(out, "id=\"obj3\" gp_index=\"3\"") != NULL);
	CHECK(strstr(out, "id=\"obj5\" gp_index=\"5\" bridge_type") != NULL);
	CHECK(strstr(out, "gp_index=\"5\" gp_index") == NULL);
	/* top-level infos moved into the root object, before its children */
	root = strstr(out, "<object type=\"Machine\"");
	info = strstr(out, "<info name=\"HostName\" value=\"node42\"/>");
	CHECK(root && info && info > root && info < strstr(out, "type=\"NUMANode\""));
	CHECK(strstr(out, "value=\"a &gt; b\"") != NULL); /* escapes untouched */
	CHECK(strstr(out, "<!--") == NULL); /* hwloc 2 cannot parse comments */
	CHECK(strstr(out, "<support name=\"custom.exported_support\"/>") != NULL);
	free(out);
}

TEST(downgraded_loads_in_hwloc)
{
	struct pn_topo_cfg cfg = { .xml_buf = v3, .xml_len = sizeof(v3) - 1 };
	struct pn_topo t;
	int ret = pn_topo_load(&t, &cfg);

	CHECK_EQ_INT(ret, 0);
	if (ret) {
		printf("#   %s\n", pn_errmsg(ret));
		return;
	}
	CHECK_STR(t.host, "node42");
	CHECK_EQ_INT(t.ngpus, 1);
	CHECK_EQ_INT(t.nnics, 1);
	if (t.nnics == 1) {
		CHECK_STR(t.devs[1].nic.name, "mlx5_0");
		CHECK_STR(t.devs[1].pci_busid, "0000:00:01.0");
	}
	pn_topo_release(&t);
}

TEST(self_closing_root)
{
	const char *in = "<topology version=\"3.0\"><object type=\"Machine\" id=\"obj1\"/>"
			 "<info name=\"HostName\" value=\"h\"/></topology>";
	char *out = downgrade(in);

	CHECK(out != NULL);
	if (!out)
		return;
	CHECK(strstr(out, "<object type=\"Machine\" id=\"obj1\" gp_index=\"1\">\n"
			  "    <info name=\"HostName\" value=\"h\"/>\n  </object>") != NULL);
	free(out);
}

TEST(malformed)
{
	char *out = (char *)"unchanged";
	size_t len = 0;

	CHECK_EQ_INT(pn_topo_xml_downgrade("<topology version=\"3.0\"><object", 31, &out, &len),
		     -EINVAL);
	CHECK_STR(out, "unchanged");
	CHECK_EQ_INT(pn_topo_xml_downgrade("</topology>", 11, &out, &len), -EINVAL);
	CHECK_EQ_INT(pn_topo_xml_downgrade("<topology version=\"3.0\"><a>", 27, &out, &len),
		     -EINVAL);
	CHECK_EQ_INT(pn_topo_xml_downgrade("<!-- open", 9, &out, &len), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "malformed") != NULL);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		if (buf) {
			buf[n] = 0;
			*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

/*
 * The hwloc 2 copies of the v3 fixtures (tests/fixtures/hwloc/v2, read by
 * lstopo 2.x in the benchmark) are exactly what the conversion gives;
 * PENNY_UPDATE_GOLDEN=1 rewrites them.
 */
/* Well-formed as penny accepts it (pn_topo_xml_check), before hwloc or the converter. */
TEST(well_formed)
{
	static const char *const good[] = {
		v3,
		"<topology version=\"2.0\"/>",
		"<?xml version=\"1.0\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
		"<topology><object type='Machine' a = \"x>y\">text &amp; more</object></topology>\n"
		"<!-- done -->\n<?pi x?>\n",
	};
	static const char *const bad[][2] = {
		{ "<topology></topology><topology/>", "line 1: a second root element" },
		{ "<topology></topology>\ntrailing", "line 2: content after the root element" },
		{ "<topology>\n<object>\n</topology>", "closing tag does not match" },
		{ "<topology>\n  <object>", "line 2: element <object> is not closed" },
		{ "x<topology/>", "text before the root element" },
		{ "<topology a=\"1\" a=\"2\"/>", "repeated attribute" },
		{ "<topology a=1/>", "attribute value must be quoted" },
		{ "<topology a=\"<\"/>", "'<' in an attribute value" },
		{ "<topology><![CDATA[x]]></topology>", "unexpected markup declaration" },
		{ "<?pi a > b ?><topology/>", "'>' inside a processing instruction" },
		{ "<!DOCTYPE t [ <!ENTITY x \"y\"> ]><topology/>", "internal subset" },
		{ "<topology/><!DOCTYPE t>", "unexpected markup declaration" },
		{ "", "no root element" },
		{ "<topology", "unterminated tag" },
	};
	size_t i;
	int ret;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK_EQ_INT(pn_topo_xml_check(good[i], strlen(good[i])), 0);
	CHECK_EQ_INT(pn_topo_xml_check("<t>\0</t>", 8), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "NUL byte") != NULL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ret = pn_topo_xml_check(bad[i][0], strlen(bad[i][0]));
		CHECK_EQ_INT(ret, -EINVAL);
		if (ret && !strstr(pn_errmsg(ret), bad[i][1]))
			printf("#   %zu: '%s' lacks '%s'\n", i, pn_errmsg(ret), bad[i][1]);
		CHECK(ret && strstr(pn_errmsg(ret), bad[i][1]) != NULL);
	}
}

TEST(fixture_copies)
{
	static const char *const names[] = { "192em64t-12gr2n8c2t", "24em64t-2n6c2t-pci",
					     "32em64t-2n8c2t-pci-normalio",
					     "power8gpudistances" };
	const char *top = getenv("TOP") ? getenv("TOP") : ".";
	const char *update = getenv("PENNY_UPDATE_GOLDEN");
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[4096], path2[4096];
		char *in, *want = NULL, *out = NULL;
		size_t len = 0, wlen = 0, olen = 0;

		snprintf(path, sizeof(path), "%s/tests/fixtures/hwloc/%s.xml", top, names[i]);
		snprintf(path2, sizeof(path2), "%s/tests/fixtures/hwloc/v2/%s.xml", top, names[i]);
		in = slurp(path, &len);
		CHECK(in != NULL);
		if (!in)
			continue;
		CHECK_EQ_INT(pn_topo_xml_version(in, len), 3);
		CHECK_EQ_INT(pn_topo_xml_downgrade(in, len, &out, &olen), 0);
		if (out && update && *update == '1') {
			FILE *f = fopen(path2, "wb");

			CHECK(f && fwrite(out, 1, olen, f) == olen);
			if (f)
				fclose(f);
		}
		want = slurp(path2, &wlen);
		CHECK(want != NULL);
		if (want && out) {
			CHECK_EQ_INT(olen, wlen);
			CHECK(olen == wlen && !memcmp(out, want, olen));
			CHECK_EQ_INT(pn_topo_xml_version(want, wlen), 2);
		}
		free(in);
		free(out);
		free(want);
	}
}

int main(void)
{
	RUN(version_detection);
	RUN(downgrade_rules);
	RUN(downgraded_loads_in_hwloc);
	RUN(self_closing_root);
	RUN(malformed);
	RUN(well_formed);
	RUN(fixture_copies);
	return unit_done();
}
