/* SPDX-License-Identifier: MIT */
/*
 * Fuzz what penny reads of a launcher's environment (src/engine/launch.c,
 * src/engine/rdv.c): the input is the environment, one NAME=VALUE a line
 * (SLURM_HOSTFILE, the one name that opens a file, is dropped).  Checked:
 * pn_boot_cfg_from_env and pn_rdv_launcher return 0 or -EINVAL; a job they
 * accept has 1..8192 ranks and its rank below them; a rendezvous has 1..4
 * terminated hosts and 1..16 ports in 1..65535; and Slurm's host-list
 * parser, run on every value, agrees with itself (host k exists for k below
 * its count, none at the count, each terminated).
 */
#include "fuzz.h"
#include "engine/boot.h"
#include "engine/launch.h"
#include "base/log.h"

#include <errno.h>
#include <string.h>

static void hostlist(const char *v)
{
	char h[64];
	long n = pn_hostlist_count(v), k;
	int r;

	FUZZ_ASSERT(n == -EINVAL || n >= 1);
	for (k = 0; n > 0 && k < n && k < 16; k++) {
		r = pn_hostlist_nth(v, k, h, sizeof(h));
		FUZZ_ASSERT(r == 0 || r == -ENAMETOOLONG);
		FUZZ_ASSERT(r || memchr(h, 0, sizeof(h)));
	}
	if (n > 0)
		FUZZ_ASSERT(pn_hostlist_nth(v, n, h, sizeof(h)) == 1);
	else
		FUZZ_ASSERT(pn_hostlist_nth(v, 0, h, sizeof(h)) == -EINVAL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size), *line, *save = NULL;
	const char *env[64];
	struct pn_boot_cfg cfg;
	int n = 0, i, ret;

	if (!s)
		return 0;
	for (line = strtok_r(s, "\n", &save); line && n < 63; line = strtok_r(NULL, "\n", &save))
		if (strchr(line, '=') && strncmp(line, "SLURM_HOSTFILE=", 15))
			env[n++] = line;
	env[n] = NULL;
	for (i = 0; i < n; i++)
		hostlist(strchr(env[i], '=') + 1);
	pn_boot_cfg_init(&cfg);
	cfg.knobs.env = env;
	ret = pn_boot_cfg_from_env(&cfg);
	FUZZ_ASSERT(ret == 0 || ret == -EINVAL);
	if (!ret) {
		FUZZ_ASSERT(cfg.nranks >= 1 && cfg.nranks <= PN_BOOT_MAX_RANKS);
		FUZZ_ASSERT(cfg.rank >= 0 && cfg.rank < cfg.nranks);
		ret = pn_rdv_launcher(&cfg);
		FUZZ_ASSERT(ret == 0 || ret == -EINVAL);
	}
	if (!ret && cfg.rdv.nhosts) {
		FUZZ_ASSERT(cfg.rdv.nhosts <= PN_RDV_MAX_HOSTS);
		FUZZ_ASSERT(cfg.rdv.nports >= 1 && cfg.rdv.nports <= PN_RDV_MAX_PORTS);
		for (i = 0; i < cfg.rdv.nhosts; i++)
			FUZZ_ASSERT(memchr(cfg.rdv.hosts[i], 0, sizeof(cfg.rdv.hosts[i])) &&
				    cfg.rdv.hosts[i][0]);
		for (i = 0; i < cfg.rdv.nports; i++)
			FUZZ_ASSERT(cfg.rdv.ports[i] > 0 && cfg.rdv.ports[i] < 65536);
	}
	pn_err_clear();
	free(s);
	return 0;
}
