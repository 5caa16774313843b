/* SPDX-License-Identifier: MIT */
/*
 * Bootstrap: who am I (rank, size, local rank) and a TCP rendezvous through
 * rank 0 ("the root").  Every message is a versioned, length-prefixed struct
 * carrying the job cookie; a connection with the wrong magic, version,
 * cookie or size is dropped and logged, never trusted.  A rank joins only
 * by proving it holds the job's secret (a challenge-response, the secret
 * never on the wire), and rank 0 proves it back.  Every wait is bounded by
 * the timeout; a dead peer is reported by rank and host.
 */
#ifndef PENNY_BOOT_H
#define PENNY_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "base/sock.h"

#define PN_BOOT_MAGIC 0x50454e4eu /* "PENN" */
#define PN_BOOT_VERSION 3
#define PN_HOSTID_LEN 96

/*
 * Limits, checked before anything is allocated or started: ranks in a job
 * (--nranks, a launcher's size) and local ranks of a self-launch (--np).
 * Rank 0 holds one socket per rank and relays every collective (see the
 * model in boot.c), which is what bounds the job size.
 */
#define PN_BOOT_MAX_RANKS 8192
#define PN_BOOT_MAX_NP 1024

/*
 * What the command read from the environment for the bootstrap (penny(1)
 * ENVIRONMENT), once, at start: the PENNY_ knobs as given, and the whole
 * environment for the launcher's own variables (SLURM_*, OMPI_*, PMI_*,
 * PMIX_*, RANK/WORLD_SIZE, MASTER_ADDR, HOME, TMPDIR, ...), which the engine
 * looks up in that snapshot and never with getenv.  NULL: unset.
 */
struct pn_boot_knobs {
	const char *root;		/* PENNY_ROOT */
	const char *root_fd;		/* PENNY_ROOT_FD */
	const char *cookie;		/* PENNY_COOKIE */
	const char *cookie_file;	/* PENNY_COOKIE_FILE */
	const char *node_id;		/* PENNY_NODE_ID */
	int bind_none;			/* PENNY_BIND=none */
	const char *const *env;		/* NAME=VALUE strings, NULL-terminated */
	const char *site_secret;	/* the site's secret file (PN_BOOT_SITE_SECRET) */
};
/* The file a site may install on every node for the jobs' secrets. */
#ifndef PN_BOOT_SITE_SECRET
#define PN_BOOT_SITE_SECRET "/etc/penny/secret"
#endif
/* Set the knobs every pn_boot_cfg_init copies (the command, once); the
 * array env is copied (its strings are not). */
void pn_boot_set_knobs(const struct pn_boot_knobs *k);
/* A variable of the snapshot env ("NAME"): its value, or NULL. */
const char *pn_boot_env(const char *const *env, const char *name);

/* Where rank 0 is to be met: addresses to try, ports to try (in order). */
#define PN_RDV_MAX_HOSTS 4
#define PN_RDV_MAX_PORTS 16
struct pn_rdv {
	char hosts[PN_RDV_MAX_HOSTS][256];
	int nhosts;
	int ports[PN_RDV_MAX_PORTS];
	int nports;
	int any;		/* rank 0 listens on every address (a derived rendezvous) */
	int probe;		/* several candidates: a listener that is not this job's
				 * rank 0 means "try the next", not "fail" */
	char how[200];		/* where it came from, for messages */
	char node[256];		/* Slurm: the node rank 0 should be on */
	int hnp;		/* Open MPI: rank 0 should be on mpirun's host */
};
/*
 * Ports of a derived rendezvous: PN_RDV_DERIVED candidates in
 * [PN_RDV_PORT_LO, PN_RDV_PORT_LO + PN_RDV_PORT_SPAN), below Linux's default
 * ephemeral range, from SHA-256 of the job's public context (pn_rdv_ports:
 * the number written to ports, distinct).
 */
#define PN_RDV_DERIVED 8
#define PN_RDV_PORT_LO 20480
#define PN_RDV_PORT_SPAN 12288
int pn_rdv_ports(const char *ctx, int *ports, int max);
/*
 * Slurm's host lists ("n[01-04,07],gpu[1-2]x[3-4]": brackets of numbers and
 * ranges, the low bound's digits giving the width, several groups varying
 * last-first): the number of hosts, or -EINVAL for what is not such a list;
 * host k into out (0, 1 past the end, -EINVAL, -ENAMETOOLONG).
 */
long pn_hostlist_count(const char *list);
int pn_hostlist_nth(const char *list, long k, char *out, size_t len);

struct pn_boot_cfg {
	int rank;		/* -1: from the launcher's environment */
	int nranks;		/* -1: from the environment */
	int local_rank;		/* -1: derived from host identities */
	const char *root;	/* --root "host:port" (NULL: knobs.root, the launcher's) */
	double timeout;		/* seconds for every wait (default 60) */
	uint8_t cookie[16];	/* the job's id on the wire once joined (from the secret) */
	int have_cookie;
	uint8_t secret[32];	/* what a rank proves it holds (SHA-256 of its source) */
	int have_secret;
	uint8_t nonce[16];	/* the job's nonce (rank 0's, or the self-launch's) */
	int have_nonce;
	char secret_src[96];	/* where the secret came from, for messages */
	int munge;		/* rank 0 hands the secret out as MUNGE credentials */
	int listen_fd;		/* self-launch: rank 0 inherits the bound root socket */
	char launcher[16];	/* out: "self", "mpirun", "srun", "pmi", "torchrun", "explicit" */
	char jobid[64];		/* launcher's job id when known ("" otherwise) */
	int single_node;	/* the launcher says every rank is on this host */
	int err_fd;		/* self-launch child: where its error lines go (-1: none) */
	struct pn_boot_knobs knobs; /* the command's (pn_boot_set_knobs) */
	struct pn_rdv rdv;	/* out: where the ranks meet (pn_boot_init) */
	const char *refuse;	/* this rank cannot run the job: tell the others why */
};

void pn_boot_cfg_init(struct pn_boot_cfg *cfg);
/*
 * Fill rank/nranks/root/cookie from the launcher's environment (the knobs'
 * snapshot) where not set:
 * OMPI_COMM_WORLD_*, SLURM_* of a step (SLURM_STEP_ID), PMI_RANK/PMI_SIZE,
 * RANK/WORLD_SIZE/LOCAL_RANK, PENNY_ROOT, MASTER_ADDR/MASTER_PORT.  With no
 * launcher and no explicit rank it is a single-rank job.  A launcher is
 * recognised by its rank variable (OMPI_COMM_WORLD_RANK, PMI_RANK) or by
 * both of its rank and size variables (SLURM_PROCID and SLURM_NTASKS in a
 * step, RANK and WORLD_SIZE); each
 * of its variables that is set must then be a number in range, else
 * -EINVAL naming it.  A root address (cfg->root) without a rank from
 * --rank or a launcher is refused (-EINVAL).  PENNY_ROOT_FD=N (rank 0 of a
 * job with a root address only): descriptor N is rank 0's rendezvous
 * socket, inherited bound and listening on the root's port (cfg->listen_fd);
 * anything else is -EINVAL naming the variable.  A self-launched rank
 * ignores an inherited PENNY_ROOT_FD.
 */
int pn_boot_cfg_from_env(struct pn_boot_cfg *cfg);

/*
 * The job's secret, for a job of several ranks that has none yet (the
 * self-launch and a single-host launcher's rendezvous file make a random
 * one): PENNY_COOKIE (any string), else the file PENNY_COOKIE_FILE, else
 * ${XDG_CONFIG_HOME:-~/.config}/penny/cookie, created with 32 random bytes
 * (hex) when missing.  A file must be a regular file of this user that no
 * one else may read or write, of 1..4096 bytes (symbolic links are not
 * followed at the last component): else -EPERM or -EINVAL naming it.  The
 * secret is the SHA-256 of the string or of the file's bytes.
 */
int pn_boot_secret(struct pn_boot_cfg *cfg);
/* The public cookie: HMAC(secret, "penny job cookie\0" + job id, else root)[0..16). */
void pn_boot_derive_cookie(struct pn_boot_cfg *cfg);

/*
 * Self-launch np local ranks: bind a root socket on 127.0.0.1, make a
 * cookie, fork (-EINVAL when cfg already names a rank, a size or a root:
 * --rank, --nranks or --root given with --np).  In a child it returns 0
 * with cfg set for that rank and *parent = 0; the child dies with the
 * parent (SIGTERM, then it removes the job's shared-memory segments) and
 * writes its error lines, without the command's prefix, to cfg->err_fd.  In
 * the parent it waits for all children and returns 0 with *parent = 1,
 * *status the worst exit status (128 + the signal when the parent itself
 * was terminated) and *report the ranks' error lines with identical ones
 * collapsed (pn_boot_collapse; free() it, may be NULL).  Once one rank has
 * failed the others get PN_BOOT_GRACE seconds to end before they are
 * killed (a stopped one at once, as it cannot end; a rank stopped for
 * cfg->timeout + PN_BOOT_GRACE is killed too, failing the job); a rank
 * killed by SIGPIPE makes *status 2.  A SIGTERM, SIGINT or SIGHUP to the
 * parent is forwarded to every rank.  The job's /dev/shm segments are
 * removed.
 */
int pn_boot_selflaunch(int np, struct pn_boot_cfg *cfg, int *parent, int *status,
		       char **report);
#define PN_BOOT_GRACE 2.0
/*
 * The one self-launch of every multi-rank run (a command's --np, check's
 * node allreduce): pn_boot_selflaunch (the caller flushes its stdio before,
 * where its ranks would write it again).  Each rank runs
 * fn(its cfg, arg) and ends with fn's return as its exit status (fn
 * flushes what it wrote); the launcher returns 0 with *status and *report
 * as pn_boot_selflaunch's, or -errno when no rank could start.
 */
int pn_boot_run_ranks(int np, struct pn_boot_cfg *cfg, int (*fn)(struct pn_boot_cfg *cfg, void *arg),
		      void *arg, int *status, char **report);
/*
 * The CPUs a launch from this process should spread its ranks over, as a
 * bit mask of len bytes (bit c of byte c / 8: CPU c): the CPUs it had
 * before a self-launcher pinned it to one core, else its affinity now.
 * The number of CPUs set, or -errno.
 */
int pn_boot_home_cpus(uint8_t *mask, size_t len);
/* A self-launched rank's line (len bytes, its '\n' included) to its
 * launcher, in one write: 0, or -errno (the launcher is gone). */
int pn_boot_tell(const struct pn_boot_cfg *cfg, const char *line, size_t len);
/*
 * How much longer than --timeout a rank waits on rank 0 in a collective:
 * rank 0, which waits on every rank, is the one that can name a rank that
 * does not answer; the others hear its reason rather than blame rank 0.
 */
#define PN_BOOT_ROOT_GRACE 1.0
/*
 * The largest message of an earlier step a rank drops after a notice (a
 * peer that went on with a step this rank left on the notice); a larger
 * one is an error.  Above every message the rendezvous sends (the table
 * and allgathers of PN_BOOT_MAX_RANKS ranks: a few MB).
 */
#define PN_BOOT_STALE_MAX (64u << 20)

/*
 * Collapse error lines of several ranks: lines "rank N: TEXT" with the same
 * TEXT become one "ranks A,B-C: TEXT" (in order of first appearance), other
 * identical lines one line.  in: lines ending in '\n'; returns a malloc'd
 * string (NULL when out of memory).
 */
char *pn_boot_collapse(const char *in, size_t len);

/* Host identity: "node:ID" for a PENNY_NODE_ID, else hostname + network
 * namespace (netns hosts are hosts). */
void pn_host_id(const char *node_id, char *id, size_t len);

struct pn_boot;

int pn_boot_init(struct pn_boot **b, const struct pn_boot_cfg *cfg);
void pn_boot_free(struct pn_boot *b);
/*
 * This rank cannot run the job (its own options or files failed, said
 * already): meet the others only to tell them why, within the timeout, so
 * that none waits for it.  Rank 0 tells each rank that comes ("rank 0 (host
 * H) cannot run the job: WHY") until all came; another rank tells rank 0,
 * which fails the job with "rank R (host H, pid P) cannot run the job: WHY".
 * Nothing for a rank alone or a self-launched rank (its launcher reports).
 * 0 when told, else -errno (nothing printed).
 */
int pn_boot_refuse(const struct pn_boot_cfg *cfg, const char *why);
int pn_boot_rank(const struct pn_boot *b);
int pn_boot_nranks(const struct pn_boot *b);
int pn_boot_local_rank(const struct pn_boot *b);
int pn_boot_local_size(const struct pn_boot *b);
/* Node index (ranks grouped by host identity, in order of first rank). */
int pn_boot_node(const struct pn_boot *b, int rank);
int pn_boot_nnodes(const struct pn_boot *b);
const char *pn_boot_host(const struct pn_boot *b, int rank); /* hostname */
const char *pn_boot_host_id(const struct pn_boot *b, int rank);
/* Name of the rank's node: its PENNY_NODE_ID when set, else the hostname. */
const char *pn_boot_node_name(const struct pn_boot *b, int rank);
int pn_boot_pid(const struct pn_boot *b, int rank);
double pn_boot_timeout(const struct pn_boot *b);
/*
 * Every wait of the collectives that follow is extra seconds longer than
 * the timeout (0: the timeout alone; at most PN_BOOT_MAX_EXTRA), for a step
 * whose own bound is known to be longer: every rank sets the same value
 * (a rank that dies is still noticed at once: its connection closes).
 */
#define PN_BOOT_MAX_EXTRA 86400.0
void pn_boot_set_extra(struct pn_boot *b, double extra);
/*
 * The connection this rank holds to rank r's process, or -1: rank 0 holds
 * one to every rank, the others one to rank 0 alone.  Its hang-up
 * (POLLRDHUP) says r's process is gone, whatever a transfer with r (an RDMA
 * queue pair the dead process's kernel still answers) says yet: a side
 * channel to watch (pn_verbs_conn_watch).  Nothing but the rendezvous reads it.
 */
int pn_boot_peer_fd(const struct pn_boot *b, int r);
/* The rendezvous address the job met at ("host:port"), NULL for a rank alone. */
const char *pn_boot_root(const struct pn_boot *b);
const uint8_t *pn_boot_cookie(const struct pn_boot *b);
/* Local address of the connection towards rank 0 (the interface peers reach). */
int pn_boot_local_addr(const struct pn_boot *b, void *sockaddr_storage, unsigned *len);

/* Typed collectives over the rendezvous (through the root). */
int pn_boot_allgather(struct pn_boot *b, const void *mine, void *all, size_t len);
int pn_boot_bcast(struct pn_boot *b, void *buf, size_t len, int root);
int pn_boot_barrier(struct pn_boot *b);
/* Logical AND of ok over all ranks (error agreement); *all_ok out. */
int pn_boot_agree(struct pn_boot *b, int ok, int *all_ok);
/*
 * Every rank's verdict on a step, with the reason: code is 0 or a negative
 * errno whose message (pn_errmsg) travels to every rank.  Returns 0 when all
 * are fine; else, on every rank, the first failing rank's code with its
 * message set, prefixed "rank R (host H): " when name_rank and not every
 * rank failed; *first (may be NULL) is that rank, or -1.
 */
int pn_boot_agree_err(struct pn_boot *b, int code, int name_rank, int *first);

/*
 * Wire format, exposed for tests: frames of base/sock.h with the magic
 * PN_BOOT_MAGIC, version PN_BOOT_VERSION and, in the cookie field, the
 * job's public tag while a rank joins, its cookie once it has joined; src
 * is the sending rank, seq the collective's sequence number.
 *
 * Joining (version 3), so that nothing secret is said before each side
 * proved it holds the job's secret: rank 0 sends every connection a
 * CHALLENGE (16 random bytes, then, when rank 0 hands out the secret through
 * MUNGE, a credential only the job's user can decode) under the tag; the
 * rank answers with its HELLO, whose mac is HMAC-SHA-256(secret,
 * "penny hello\0" + challenge + the hello's 40 header bytes + its payload
 * with mac zeroed); rank 0 checks it before it looks at anything the hello
 * says, then answers with a WELCOME: HMAC-SHA-256(secret, "penny welcome\0"
 * + the hello's nonce + challenge + rank as 4 little-endian bytes + tag +
 * the job's nonce), then the job's nonce (48 bytes), which the rank checks
 * before it trusts rank 0.  Only then does the rank know the job's cookie
 * (pn_boot_derive_cookie, from the nonce: another for every job, even with
 * the same secret and address), and only what comes after the WELCOME on
 * that connection is believed: an ABORT before it is a stranger's, never
 * shown.  The hello's seq is the job the rank has met (0: none yet; else
 * a 32-bit mark of that job's nonce, join.c): a rank that met one rank 0
 * and finds another at its address (a job restarted with the same secret
 * while it retried) is dropped by that rank 0 with one line, the job going
 * on without it, and stops (-EACCES) on seeing the new nonce in the
 * WELCOME.  No version bump: a rank 0 of before ignores a hello's seq and
 * a rank of before sends 0, so old and new ranks still meet.  A hello
 * without the proof is dropped with one line (and an
 * unproven ABORT with seq EACCES: a rank given another secret stops, saying
 * so in its own words); it never fails the job.  A hello with the REFUSE
 * flag is a rank that cannot run the job: an ABORT with its reason follows.
 */
enum pn_wire_type {
	PN_MSG_HELLO = 1,	/* rank -> root: struct pn_wire_hello */
	PN_MSG_TABLE = 2,	/* root -> rank: hello of every rank */
	PN_MSG_GATHER = 3,	/* rank -> root: contribution */
	PN_MSG_GATHERED = 4,	/* root -> rank: all contributions */
	PN_MSG_ABORT = 5,	/* either way: a rank failed; payload is the text;
				 * during the rendezvous seq is the errno */
	PN_MSG_CHALLENGE = 6,	/* root -> new connection: 16-byte nonce [+ MUNGE credential] */
	PN_MSG_WELCOME = 7,	/* root -> rank: its 32-byte proof, the job's 16-byte nonce */
};

#define PN_WIRE_NONCE_LEN 16
#define PN_WIRE_MAC_LEN 32
#define PN_WIRE_CRED_MAX 2048	/* a MUNGE credential in a CHALLENGE */

#define PN_HELLO_REFUSE 1u	/* flags: this rank cannot run the job (an ABORT follows) */

struct pn_wire_hello {
	uint32_t rank;
	uint32_t nranks;
	int32_t pid;
	uint32_t flags;
	char host[64];
	char host_id[PN_HOSTID_LEN];
	uint8_t nonce[PN_WIRE_NONCE_LEN];	/* the rank's, for rank 0's proof */
	uint8_t mac[PN_WIRE_MAC_LEN];		/* the rank's proof */
};

#define PN_WIRE_MAX_PAYLOAD (64u << 20)

void pn_wire_hdr_init(struct pn_frame *h, const uint8_t cookie[16], uint16_t type,
		      uint32_t src, uint32_t seq, uint64_t len);
/* Check magic/version/cookie/size; returns 0 or -EPROTO with a message. */
int pn_wire_hdr_check(const struct pn_frame *h, const uint8_t cookie[16], uint16_t type,
		      uint64_t max_len);
/*
 * Rank 0's check of the first len bytes a connection sent (a header, then
 * a hello) in answer to challenge, for a job of nranks: -EAGAIN while they
 * are a valid beginning, 0 when a whole valid hello arrived (copied to
 * *out, strings terminated), -EPROTO for a stranger (magic, version,
 * type, size), -ESRCH for a rank of another job (another tag), -EACCES for
 * a hello without the proof of the secret (checked before anything it
 * says), -EINVAL for a proven hello that cannot be of this job (rank 0 or
 * out of range, another job size, another sender; copied to *out too):
 * each with a message.
 */
int pn_wire_hello_check(const void *buf, size_t len, const uint8_t tag[16],
			const uint8_t secret[32], const uint8_t challenge[PN_WIRE_NONCE_LEN],
			int nranks, struct pn_wire_hello *out);
/* The hello's proof (mac) for challenge; hdr: its 40 header bytes. */
void pn_wire_hello_mac(const uint8_t secret[32], const uint8_t challenge[PN_WIRE_NONCE_LEN],
		       const uint8_t hdr[PN_FRAME_HDR_LEN], const struct pn_wire_hello *h,
		       uint8_t mac[PN_WIRE_MAC_LEN]);
/* Rank 0's proof (WELCOME) to the rank whose hello had nonce. */
void pn_wire_welcome_mac(const uint8_t secret[32], const uint8_t challenge[PN_WIRE_NONCE_LEN],
			 const uint8_t nonce[PN_WIRE_NONCE_LEN], uint32_t rank,
			 const uint8_t tag[16], const uint8_t job_nonce[PN_WIRE_NONCE_LEN],
			 uint8_t mac[PN_WIRE_MAC_LEN]);
/* Text from the wire goes to terminals and logs: printable ASCII only. */
void pn_wire_printable(char *s, size_t len);



/*
 * Where rank 0's notices during the rendezvous go, one line each without
 * the command's prefix ("rank 0: dropped a connection to the rendezvous:
 * WHY"): the engine prints nothing, the command installs a sink (NULL, the
 * default: nowhere).
 */
typedef void pn_boot_notice_fn(const char *line);
void pn_boot_set_notice(pn_boot_notice_fn *fn);

/*
 * What this rank says of a set-up error code the ranks agreed on (the
 * first failing rank's, the same on every rank): rank 0 code itself, said
 * once for all.  Another rank nothing (0), unless its rendezvous failed
 * under it first: then one line of its own, the abort notice it heard and
 * from which rank ("rank R: stopped by an abort notice from rank 0 (rank 0
 * says why)"), or the connection it lost ("rank R: rank 0 (host H, pid P)
 * closed its connection during agreement: ...", whose rank may say nothing).
 */
int pn_boot_agreed_error(const struct pn_boot *b, int code);
/* Best-effort notice to every rank that this one failed (text = reason). */
void pn_boot_abort(struct pn_boot *b, const char *why);
/*
 * Non-blocking: -ECANCELED if a peer aborted, -EPIPE if a connection
 * closed.  An ABORT is taken off its connection whole (its text up to 4096
 * bytes; the first 299 are said).
 */
int pn_boot_poll_abort(struct pn_boot *b);
/*
 * The frame header waiting on fd, peeked (not taken) and decoded from its
 * 40 little-endian wire bytes as pn_frame_get does, whatever the host's
 * byte order: 1 with *h, 0 while fewer bytes are there, -EPIPE when the
 * peer closed or reset the connection.
 */
int pn_boot_peek_hdr(int fd, struct pn_frame *h);
/*
 * err (< 0, its message set) as this rank's own fault when it was stopped
 * (SIGSTOP) and resumed since the rendezvous: "this rank (R, host H) was
 * stopped and resumed during the job: the others gave up waiting for it
 * (the message)", not the peer it then found gone named as the cause.
 * Otherwise err, its message untouched.
 */
int pn_boot_if_stopped(struct pn_boot *b, int err);
#endif
