/* SPDX-License-Identifier: MIT */
/*
 * Unit tests over real ranks: np ranks self-launched over the rendezvous
 * (engine/boot.h), each running child(cfg, round, fd), which writes one
 * line "RANK REST\n" to fd and exits; out[RANK] gets REST ("" for a rank
 * that wrote none).
 */
#ifndef PENNY_T_RANKS_H
#define PENNY_T_RANKS_H

#include "engine/boot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T_RANKS_LINE 600

typedef void t_rank_fn(struct pn_boot_cfg *cfg, int round, int fd);

/* The ranks' --timeout (a test of a timeout sets it lower). */
static double t_ranks_timeout = 10;

static inline void t_ranks_run(int np, t_rank_fn *child, int round, char (*out)[T_RANKS_LINE])
{
	struct pn_boot_cfg cfg;
	int pfd[2], parent = 0, status = 0, i;
	char *report = NULL;
	FILE *f;

	memset(out, 0, (size_t)np * T_RANKS_LINE);
	if (pipe(pfd))
		return;
	pn_boot_cfg_init(&cfg);
	cfg.timeout = t_ranks_timeout;
	fflush(NULL);
	if (pn_boot_selflaunch(np, &cfg, &parent, &status, &report)) {
		close(pfd[0]);
		close(pfd[1]);
		return;
	}
	if (!parent) {
		close(pfd[0]);
		child(&cfg, round, pfd[1]);
		_exit(0);
	}
	free(report);
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	for (i = 0; f && i < np; i++) {
		char line[T_RANKS_LINE];
		int r;

		if (!fgets(line, sizeof(line), f) || sscanf(line, "%d", &r) != 1 || r < 0 || r >= np)
			break;
		line[strcspn(line, "\n")] = 0;
		snprintf(out[r], T_RANKS_LINE, "%s", strchr(line, ' ') + 1);
	}
	if (f)
		fclose(f);
}

#endif
