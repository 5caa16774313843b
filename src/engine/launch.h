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

#include <signal.h>

#include "engine/boot.h"

/* A job's state (boot.h): shared by the rendezvous (join.c) and the collectives (boot.c). */
struct pn_boot {
	struct pn_boot_cfg cfg;
	int rank, nranks;
	int *fds;		/* root: fd per rank; others: fds[0] = root */
	struct pn_wire_hello *hello; /* every rank's hello */
	int *node;		/* node index per rank */
	int nnodes, local_rank, local_size;
	uint32_t seq;
	double extra;		/* seconds every collective's wait adds (pn_boot_set_extra) */
	sig_atomic_t conts;	/* boot_conts when the job began */
	int abort_code;		/* errno carried by the last ABORT received (rendezvous) */
	char abort_text[300];	/* the first ABORT's text: every later poll reports it */
	char heard[300];	/* the last ABORT's text heard (rank 0's latest word) */
	unsigned char *said;	/* per rank: it sent this rank a notice (NULL: none yet) */
	int lost, lost_from;	/* how the rendezvous failed under this rank: the first
				 * error of its own (pn_boot_agreed_error) */
	char lost_why[300];
	int step_failed;	/* the first step that failed under this rank on a peer (no
				 * answer, a closed connection): every later step says it */
	char step_why[300];
	char rdv_file[320];	/* rank 0: the rendezvous file it published */
	uint8_t tag[16];	/* the job's public tag (pn_boot_tag) */
	char root[300];		/* "host:port" the job met at */
};

/* engine/boot.c: a frame to fd; a frame from rank r; a failed step with rank r. */
int pn_boot_send_seq(struct pn_boot *b, int fd, uint16_t type, uint32_t seq, const void *payload,
		     size_t len, double deadline);
int pn_boot_recv_msg(struct pn_boot *b, int r, uint16_t type, void *buf, size_t len,
		     double deadline, const char *what);
int pn_boot_peer_error(struct pn_boot *b, int r, int ret, const char *what);
/* Note SIGCONTs from now on: a rank stopped and resumed says so. */
void pn_boot_watch_cont(struct pn_boot *b);
/*
 * engine/join.c: where the job meets and with what secret; rank 0 listens
 * and takes every rank's proven hello; another rank joins.  0 or -errno
 * with a message.
 */
int pn_boot_where(struct pn_boot *b, double deadline);
int pn_boot_root_listen(struct pn_boot *b);
int pn_boot_root_accept(struct pn_boot *b, double deadline);
int pn_boot_rank_join(struct pn_boot *b, double deadline);

/* len bytes from /dev/urandom: 0 or -errno. */
int pn_boot_random(uint8_t *buf, size_t len);
/* Exactly 2n hex digits of s to n bytes: 0, or -EINVAL. */
int pn_boot_hex(const char *s, uint8_t *out, size_t n);
/*
 * Raise the open-file limit so that n connections fit; -EMFILE with a
 * message when even the hard limit is too low and must_fit.
 */
int pn_boot_fd_budget(int n, int must_fit);

/* The job's public context ("LAUNCHER:JOBID", else "root:HOST:PORT"). */
void pn_boot_ctx(const struct pn_boot_cfg *cfg, char *out, size_t len);
/* The job's public tag: SHA-256("penny job tag\0" + context), 16 bytes. */
void pn_boot_tag(const struct pn_boot_cfg *cfg, uint8_t tag[16]);
/*
 * A launcher's rank other than 0 whose secret would be the per-user file
 * waits for rank 0's CHALLENGE (cfg->munge): when it carries no MUNGE
 * credential, the per-user file after all.  0 or -errno (exit 2).
 */
int pn_boot_secret_later(struct pn_boot_cfg *cfg);
/*
 * MUNGE (engine/secret.c): a credential only this uid can decode, carrying
 * the job's tag and secret (free() it); its decoding on another rank, which
 * checks the maker's uid and the tag.  0, or -errno with a message.
 */
int pn_boot_munge_encode(const uint8_t tag[16], const uint8_t secret[32], char **cred);
int pn_boot_munge_decode(const char *cred, const uint8_t tag[16], uint8_t secret[32]);
/*
 * The launcher's own rendezvous (engine/rdv.c) for a job without --root,
 * PENNY_ROOT or a rendezvous file: fills cfg->rdv.  0, or -EINVAL with one
 * line naming the launcher and the recipe.
 */
int pn_rdv_launcher(struct pn_boot_cfg *cfg);
/*
 * A single-host launcher's rendezvous file (engine/rdv.c): rank 0 listens on
 * loopback with a random secret and publishes both (published: the file's
 * path, to unlink), the others read them: cfg->root and the secret set.
 */
int pn_rdv_file(struct pn_boot_cfg *cfg, double deadline, char *published, size_t len);
/* Rank 0 of a derived rendezvous: is this the host the others look for? */
int pn_rdv_check_root(const struct pn_boot_cfg *cfg);

#endif
