/* SPDX-License-Identifier: MIT */
/*
 * NHC-style checks of a node's topology, as penny topo --expect-* runs them:
 * each failed check is one line in a list of violations.
 */
#ifndef PENNY_TOPO_CHECK_H
#define PENNY_TOPO_CHECK_H

#include "node/topo.h"

struct pn_topo_expect {
	int gpus, nics;		/* exactly this many; -1 not checked */
	double rate;		/* every checked port at least this (Gb/s); -1 not checked */
	int state;		/* every checked port in this state (nic.h); -1 not checked */
	const char *state_name;	/* the state as given, for the messages */
	const char *devices;	/* "DEV[:PORT],...": the ports that rate and state look at; NULL all */
	int rail;		/* every GPU has a NIC at PIX or PXB */
};

struct pn_topo_viol {
	char **v;		/* one line each */
	int n, cap, oom;
};

/*
 * e as given, before anything is read: -d (devices) only with a port check
 * (state or rate), at most 64 entries, each DEV or DEV:PORT with PORT
 * 1..255 (a device or port that does not exist is a failed check later, as
 * a vanished NIC is).  0, or -EINVAL (-ENOMEM) with a message.
 */
int pn_topo_expect_valid(const struct pn_topo_expect *e);
/*
 * A -d list as given (topo's, check's): at most 64 entries, each DEV or
 * DEV:PORT with PORT 1..255.  0, or -EINVAL (-ENOMEM) with a message.
 */
int pn_topo_devlist_valid(const char *devices);
/*
 * One entry of a -d list, DEV or DEV:PORT (PORT 1..255), split in place at
 * its first ':' (entry becomes DEV): *port the port, 0 when none given.
 * 0, or -EINVAL with a message.
 */
int pn_topo_dev_entry(char *entry, int *port);
/* e asks for a check. */
int pn_topo_expect_any(const struct pn_topo_expect *e);

/*
 * Run the checks e asks for on t, appending to v.  0, or -ENOMEM (with a
 * message) when a violation could not be recorded.
 */
int pn_topo_check(const struct pn_topo *t, const struct pn_topo_expect *e, struct pn_topo_viol *v);
void pn_topo_viol_release(struct pn_topo_viol *v);

#endif
