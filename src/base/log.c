/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

unsigned pn_debug_mask;

static const struct {
	const char *name;
	unsigned bit;
} subsys_names[] = {
	{ "INIT", PN_LOG_INIT }, { "BOOT", PN_LOG_BOOT },
	{ "NET", PN_LOG_NET },   { "SHM", PN_LOG_SHM },
	{ "COLL", PN_LOG_COLL }, { "TOPO", PN_LOG_TOPO },
	{ "NIC", PN_LOG_NIC },   { "PLUGIN", PN_LOG_PLUGIN },
	{ "VERBS", PN_LOG_VERBS }, { "TUNE", PN_LOG_TUNE },
	{ "ALL", PN_LOG_ALL },
};

const char *pn_debug_names(void)
{
	return "INIT,BOOT,NET,SHM,COLL,TOPO,NIC,PLUGIN,VERBS,TUNE,ALL";
}

int pn_debug_parse(const char *list, unsigned *mask)
{
	unsigned m = 0;
	int invert = 0;
	const char *p = list;

	if (!list || !*list) {
		*mask = PN_LOG_ALL;
		return 0;
	}
	if (*p == '^') {
		invert = 1;
		p++;
	}
	while (*p) {
		size_t len = strcspn(p, ",");
		size_t i;
		int found = 0;

		for (i = 0; i < sizeof(subsys_names) / sizeof(subsys_names[0]); i++) {
			if (strlen(subsys_names[i].name) == len &&
			    !strncasecmp(subsys_names[i].name, p, len)) {
				m |= subsys_names[i].bit;
				found = 1;
			}
		}
		if (!found)
			return pn_err(-EINVAL, "unknown debug subsystem '%.*s' (known: %s)",
				      (int)len, p, pn_debug_names());
		p += len;
		if (*p == ',' && !*++p) /* as --debug's list: no empty element */
			return pn_err(-EINVAL, "debug list '%s' ends with a comma", list);
	}
	*mask = invert ? (PN_LOG_ALL & ~m) : m;
	return 0;
}

void pn_dbg(unsigned subsys, const char *fmt, ...)
{
	char host[64] = "";
	char line[1024];
	struct timespec ts;
	const char *name = "?";
	size_t i;
	va_list ap;
	int n;

	for (i = 0; i < sizeof(subsys_names) / sizeof(subsys_names[0]); i++)
		if (subsys_names[i].bit == subsys)
			name = subsys_names[i].name;
	gethostname(host, sizeof(host) - 1);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(line, sizeof(line), "%s:%d [%ld.%06ld] penny %s ", host,
		     (int)getpid(), (long)ts.tv_sec, ts.tv_nsec / 1000L, name);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per line so lines of several ranks do not interleave. */
	n = (int)strlen(line);
	if (n < (int)sizeof(line) - 1)
		line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

static _Thread_local char err_buf[1024];	/* as long as a line cmd/ says */

int pn_verr(int code, const char *fmt, va_list ap)
{
	vsnprintf(err_buf, sizeof(err_buf), fmt, ap);
	return code;
}

int pn_err(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pn_verr(code, fmt, ap);
	va_end(ap);
	return code;
}

int pn_err_ctx(int code, const char *fmt, ...)
{
	char prefix[256], old[sizeof(err_buf)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	if (err_buf[0])
		memcpy(old, err_buf, sizeof(old));
	else
		snprintf(old, sizeof(old), "%s", strerror(code < 0 ? -code : code));
	snprintf(err_buf, sizeof(err_buf), "%s: %s", prefix, old);
	return code;
}

const char *pn_errmsg(int code)
{
	if (!err_buf[0])
		return strerror(code < 0 ? -code : code);
	return err_buf;
}

void pn_err_clear(void)
{
	err_buf[0] = 0;
}

int pn_exit_status(int err)
{
	switch (err) {
	/* usage, or a job this host cannot hold */
	case -EINVAL:
	case -ENOSPC:
	case -ENOMEM:
	case -EMFILE:
	case -ENFILE:
	case -EPERM:
	case -EACCES:
	case -ENODEV:
	case -ENOENT:
	case -ENOTSUP:
	case -EPROTONOSUPPORT:
	case -EAFNOSUPPORT:
	/* an input or output that is a directory, too large, or past a limit */
	case -EISDIR:
	case -ENOTDIR:
	case -EFBIG:
	case -ELOOP:
	case -ENAMETOOLONG:
	/* a peer that never came or never answered, a refused or unreachable
	 * connection, another rank that could not connect (ENOTCONN) */
	case -ETIMEDOUT:
	case -ENOTCONN:
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -ENETDOWN:
	case -EADDRINUSE:
	case -EADDRNOTAVAIL:
		return 2;
	/* EIO (a work request or a peer failed), EPIPE, ECONNRESET, ECANCELED
	 * (a rank aborted: its own status reaches the launcher), EPROTO */
	default:
		return 1;
	}
}
