/* SPDX-License-Identifier: MIT */
/*
 * What engine/launch.c (launcher environments, self-launch) shares with the
 * rendezvous in engine/boot.c; internal to the two.  The public interface
 * of both is engine/boot.h.
 */
#ifndef PENNY_LAUNCH_H
#define PENNY_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

/* len bytes from /dev/urandom: 0 or -errno. */
int pn_boot_random(uint8_t *buf, size_t len);
/* Exactly 2n hex digits of s to n bytes: 0, or -EINVAL. */
int pn_boot_hex(const char *s, uint8_t *out, size_t n);
/*
 * Raise the open-file limit so that n connections fit; -EMFILE with a
 * message when even the hard limit is too low and must_fit.
 */
int pn_boot_fd_budget(int n, int must_fit);

#endif
