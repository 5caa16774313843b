/* SPDX-License-Identifier: MIT */
/*
 * The wire format of the rendezvous (boot.h): a frame's header, rank 0's
 * check of a hello and the two proofs of the job's secret (hello and
 * welcome).  Pure functions over bytes, for boot.c and the fuzzer.
 */
#include "engine/boot.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/util.h"

#include <errno.h>
#include <string.h>


void pn_wire_hdr_init(struct pn_frame *h, const uint8_t cookie[16], uint16_t type,
		      uint32_t src, uint32_t seq, uint64_t len)
{
	memset(h, 0, sizeof(*h));
	h->magic = PN_BOOT_MAGIC;
	h->version = PN_BOOT_VERSION;
	h->type = type;
	memcpy(h->cookie, cookie, 16);
	h->src = src;
	h->seq = seq;
	h->len = len;
}

int pn_wire_hdr_check(const struct pn_frame *h, const uint8_t cookie[16], uint16_t type,
		      uint64_t max_len)
{
	if (h->magic != PN_BOOT_MAGIC)
		return pn_err(-EPROTO, "bad magic 0x%08x", h->magic);
	if (h->version != PN_BOOT_VERSION)
		return pn_err(-EPROTO, "protocol version %u, expected %u", h->version,
			      PN_BOOT_VERSION);
	if (memcmp(h->cookie, cookie, 16))
		return pn_err(-EPROTO, "wrong job cookie");
	if (type && h->type != type && h->type != PN_MSG_ABORT)
		return pn_err(-EPROTO, "message type %u, expected %u", h->type, type);
	if (h->len > max_len)
		return pn_err(-EPROTO, "message of %llu bytes, at most %llu expected",
			      (unsigned long long)h->len, (unsigned long long)max_len);
	return 0;
}

void pn_wire_printable(char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && s[i]; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			s[i] = '?';
}

void pn_wire_hello_mac(const uint8_t secret[32], const uint8_t challenge[PN_WIRE_NONCE_LEN],
		       const uint8_t hdr[PN_FRAME_HDR_LEN], const struct pn_wire_hello *h,
		       uint8_t mac[PN_WIRE_MAC_LEN])
{
	static const char tag[] = "penny hello";
	struct pn_wire_hello m = *h;
	const void *p[4] = { tag, challenge, hdr, &m };
	size_t l[4] = { sizeof(tag), PN_WIRE_NONCE_LEN, PN_FRAME_HDR_LEN, sizeof(m) };

	memset(m.mac, 0, sizeof(m.mac));
	pn_hmac_sha256(secret, 32, 4, p, l, mac);
}

void pn_wire_welcome_mac(const uint8_t secret[32], const uint8_t challenge[PN_WIRE_NONCE_LEN],
			 const uint8_t nonce[PN_WIRE_NONCE_LEN], uint32_t rank,
			 const uint8_t tag[16], const uint8_t job_nonce[PN_WIRE_NONCE_LEN],
			 uint8_t mac[PN_WIRE_MAC_LEN])
{
	static const char label[] = "penny welcome";
	uint8_t r[4];
	const void *p[6] = { label, nonce, challenge, r, tag, job_nonce };
	size_t l[6] = { sizeof(label), PN_WIRE_NONCE_LEN, PN_WIRE_NONCE_LEN, sizeof(r), 16,
			PN_WIRE_NONCE_LEN };

	pn_put_u32(r, rank);
	pn_hmac_sha256(secret, 32, 6, p, l, mac);
}

int pn_wire_hello_check(const void *buf, size_t len, const uint8_t tag[16],
			const uint8_t secret[32], const uint8_t challenge[PN_WIRE_NONCE_LEN],
			int nranks, struct pn_wire_hello *out)
{
	uint8_t magic[4], mac[PN_WIRE_MAC_LEN];
	struct pn_frame h;
	struct pn_wire_hello m;
	int ret;

	if (len < PN_FRAME_HDR_LEN) {
		/* garbage (a port scanner, HTTP) is known by its first bytes */
		pn_put_u32(magic, PN_BOOT_MAGIC);
		if (memcmp(buf, magic, PN_MIN(len, sizeof(magic)))) {
			memcpy(magic, buf, PN_MIN(len, sizeof(magic)));
			pn_get_u32(magic, &h.magic);
			return pn_err(-EPROTO, "bad magic 0x%08x", h.magic);
		}
		return -EAGAIN;
	}
	pn_frame_get(&h, buf);
	/* the tag is the job's public name: another one is a rank of another
	 * job (another job id or rendezvous address) */
	if (h.magic == PN_BOOT_MAGIC && h.version == PN_BOOT_VERSION && memcmp(h.cookie, tag, 16))
		return pn_err(-ESRCH, "a hello of another job (another job id or rendezvous "
			      "address)");
	ret = pn_wire_hdr_check(&h, tag, PN_MSG_HELLO, sizeof(m));
	if (ret)
		return ret;
	if (h.type != PN_MSG_HELLO)
		return pn_err(-EPROTO, "message type %u before a hello", h.type);
	if (h.len != sizeof(m))
		return pn_err(-EPROTO, "hello of %llu bytes, expected %zu", (unsigned long long)h.len,
			      sizeof(m));
	if (len < PN_FRAME_HDR_LEN + sizeof(m))
		return -EAGAIN;
	memcpy(&m, (const char *)buf + PN_FRAME_HDR_LEN, sizeof(m));
	pn_wire_hello_mac(secret, challenge, buf, &m, mac);
	m.host[sizeof(m.host) - 1] = 0;
	m.host_id[sizeof(m.host_id) - 1] = 0;
	pn_wire_printable(m.host, sizeof(m.host));
	pn_wire_printable(m.host_id, sizeof(m.host_id));
	/* nothing it says counts before it proved the secret */
	if (pn_memeq_ct(mac, m.mac, sizeof(mac)))
		return pn_err(-EACCES, "a hello claiming rank %u of %u (pid %d on %s) without the proof "
			      "of the job's secret", m.rank, m.nranks, m.pid, m.host);
	/* proven: rank 0 answers it, whether or not it is of this job */
	*out = m;
	if (h.src != m.rank)
		return pn_err(-EINVAL, "a header of rank %u with the hello of rank %u", h.src, m.rank);
	if (m.pid <= 0)
		return pn_err(-EINVAL, "hello of rank %u with pid %d", m.rank, m.pid);
	/* the job's secret and cookie, another job: two jobs on one address
	 * with one secret, or a rank started with other arguments; the whole
	 * job fails, naming it */
	if (m.nranks != (uint32_t)nranks)
		return pn_err(-EINVAL, "rank %u (pid %d on %s) is in a job of %u ranks, rank 0 in one of %d: "
			      "two jobs on one rendezvous address?", m.rank, m.pid, m.host, m.nranks,
			      nranks);
	if (m.rank == 0 || m.rank >= (uint32_t)nranks)
		return pn_err(-EINVAL, "a second rank %u (pid %d on %s) joined a job of %d ranks: two jobs "
			      "on one rendezvous address?", m.rank, m.pid, m.host, nranks);
	return 0;
}
