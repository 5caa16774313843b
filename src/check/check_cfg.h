/* SPDX-License-Identifier: MIT */
/*
 * The configuration of `penny check` (--config FILE): one "key = value" per
 * line, '#' starts a comment.  Every key is in one table (check_cfg.c) with
 * its type, range, default and a line of documentation; an unknown key, a
 * value out of range or a key given twice is an error naming the file and
 * line.  The file is read through the one bounded reader (base/file.h).
 * Keys are "<check>.<what>" ("nic-bw.fraction", "pcie.allow-idle-gpu") or
 * "job.<what>" for the rules over the whole job.
 */
#ifndef PENNY_CHECK_CFG_H
#define PENNY_CHECK_CFG_H

#include <stddef.h>

struct pn_check_cfg;

/* Every key at its default.  NULL on allocation failure (pn_err). */
struct pn_check_cfg *pn_check_cfg_new(void);
void pn_check_cfg_free(struct pn_check_cfg *c);
/* Read FILE / text (name: for messages); -EINVAL "FILE:LINE: why" on any bad line. */
int pn_check_cfg_load(struct pn_check_cfg *c, const char *path);
int pn_check_cfg_parse(struct pn_check_cfg *c, const char *text, size_t len, const char *name);

/*
 * A key's value: 1 when the config set it, 0 when *v / the return is the
 * table's default.  Asking for a key that is not in the table, or with the
 * wrong type, is a programming error: -EINVAL.
 */
int pn_check_cfg_num(const struct pn_check_cfg *c, const char *key, double *v);
int pn_check_cfg_str(const struct pn_check_cfg *c, const char *key, const char **v);

/* The table, for the man page test and `penny check --list-keys`. */
struct pn_check_key {
	const char *key;
	int type;		/* enum pn_check_key_type */
	double min, max, dflt;	/* numbers */
	const char *dflt_str;	/* strings (NULL: none) */
	const char *doc;	/* one line */
	const char *choices;	/* strings: the values it takes, space-separated; NULL: any */
};
/*
 * A number is decimal ("0.9", "1e6"), an integer decimal digits only
 * ("4096"), both numbers to pn_check_cfg_num; a text and a list (of
 * choices, comma-separated: "pcie,nic-bw") are strings to pn_check_cfg_str.
 */
/* PN_KEY_SIZE: bytes, written as penny(1)'s sizes (4096, 64K, 1GiB) */
enum pn_check_key_type { PN_KEY_TEXT, PN_KEY_NUM, PN_KEY_INT, PN_KEY_LIST, PN_KEY_SIZE };
#define PN_KEY_IS_NUM(k) \
	((k)->type == PN_KEY_NUM || (k)->type == PN_KEY_INT || (k)->type == PN_KEY_SIZE)
const struct pn_check_key *pn_check_keys(size_t *n);
/* Its type, default ("none" when it has none) and range, as --list-keys shows them. */
const char *pn_check_key_text(const struct pn_check_key *k, char *dflt, size_t dlen,
			      char *range, size_t rlen);

#endif
