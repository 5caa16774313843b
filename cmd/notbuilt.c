/* SPDX-License-Identifier: MIT */
#include "penny.h"

#include <stdio.h>

const struct pn_opt no_options[] = { OPT_TABLE_END };

int cmd_not_built(struct pn_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "penny %s: not built in this version of penny (%s)\n", ctx->name,
		PENNY_VERSION);
	return 2;
}
