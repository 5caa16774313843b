/* SPDX-License-Identifier: MIT */
/*
 * Errors and debug logging for libpenny.
 *
 * Engine functions return 0 or a negative errno; pn_err() records a one-line
 * message (lowercase, no full stop, subject in quotes) that the caller in
 * cmd/ prints.  Debug output goes to stderr, filtered by a subsystem mask
 * (like NCCL_DEBUG_SUBSYS); it is never used for results.
 */
#ifndef PENNY_LOG_H
#define PENNY_LOG_H

#include <stdarg.h>

enum pn_subsys {
	PN_LOG_INIT = 1u << 0,
	PN_LOG_BOOT = 1u << 1,
	PN_LOG_NET = 1u << 2,
	PN_LOG_SHM = 1u << 3,
	PN_LOG_COLL = 1u << 4,
	PN_LOG_TOPO = 1u << 5,
	PN_LOG_NIC = 1u << 6,
	PN_LOG_PLUGIN = 1u << 7,
	PN_LOG_VERBS = 1u << 8,
	PN_LOG_TUNE = 1u << 9,
	PN_LOG_ALL = 0x3ffu,
};

extern unsigned pn_debug_mask;

/* Parse "ALL", "BOOT,NET", "^SHM" (all but); returns 0 or -EINVAL. */
int pn_debug_parse(const char *list, unsigned *mask);
/* Comma-separated names of all subsystems, for --help. */
const char *pn_debug_names(void);

void pn_dbg(unsigned subsys, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define PN_DBG(sub, ...)                                                       \
	do {                                                                   \
		if (pn_debug_mask & (sub))                                     \
			pn_dbg((sub), __VA_ARGS__);                            \
	} while (0)

/* Record an error message for this thread and return code (negative). */
int pn_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int pn_verr(int code, const char *fmt, va_list ap);
/* Prefix the current message with "what: " (adds context on the way up). */
int pn_err_ctx(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Last recorded message, or strerror(-code) if none was recorded. */
const char *pn_errmsg(int code);
void pn_err_clear(void);
/*
 * The exit status for an engine error, the one mapping that cmd/ exits
 * with: 2 when the test could not run (usage; a job the host cannot hold:
 * memory, /dev/shm, open files, a refused rendezvous file, no device; an
 * input or output that is a directory or too large; a peer that never came
 * or never answered within --timeout, a refused or unreachable connection,
 * another rank that could not connect), 1 when it ran and failed (a work
 * request or a peer that failed, a peer that went away or aborted during
 * the run, a protocol error, wrong values).
 */
int pn_exit_status(int err);

#endif
