# SPDX-License-Identifier: MIT
# For the tests' Python peers (strangers, old-protocol clients): connect to
# a penny listener on 127.0.0.1 that may not be up yet; play a penny bw
# server or client (bw_capture, bw_start).
import socket
import time


def conn(port, tries=100):
    for _ in range(tries):
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    raise SystemExit("no listener")


# The rendezvous' wire (engine/boot.h): a 40-byte little-endian header, then
# the payload.  For the tests' strangers, who know the format and the address
# but not the job's secret.
import hashlib
import hmac
import os
import struct

MAGIC = 0x50454E4E
HELLO, TABLE, ABORT, CHALLENGE, WELCOME = 1, 2, 5, 6, 7


def old_cookie(s):
    """The cookie version 1 derived from a public string (--root, a job id)."""
    h1, h2, m = 1469598103934665603, 0x9E3779B97F4A7C15, (1 << 64) - 1
    for c in s.encode():
        h1 = ((h1 ^ c) * 1099511628211) & m
        h2 = ((h2 ^ c) * 0x100000001B3 + 7) & m
    return struct.pack("<QQ", h1, h2)


def job_secret(s):
    """The secret of a PENNY_COOKIE string or a cookie file's bytes."""
    return hashlib.sha256(s if isinstance(s, bytes) else s.encode()).digest()


def header(version, typ, cookie, src, seq, length):
    return struct.pack("<IHH16sIIQ", MAGIC, version, typ, cookie, src, seq, length)


def read_frame(s):
    """(type, payload) of the next frame; None when the peer closed."""
    h = b""
    while len(h) < 40:
        d = s.recv(40 - len(h))
        if not d:
            return None
        h += d
    _, _, typ, _, _, _, n = struct.unpack("<IHH16sIIQ", h)
    p = b""
    while len(p) < min(n, 4096):
        d = s.recv(min(n, 4096) - len(p))
        if not d:
            break
        p += d
    return typ, p


def hello_v1(cookie, rank, nranks, pid=4242, host="intruder"):
    body = struct.pack("<IIiI64s96s", rank, nranks, pid, 0, host.encode(), b"host:intruder")
    return header(1, HELLO, cookie, rank, 0, len(body)) + body


def job_tag(context):
    """The job's public tag (version 3): context is "LAUNCHER:JOBID" or "root:HOST:PORT"."""
    return hashlib.sha256(b"penny job tag\0" + context.encode()).digest()[:16]


def hello_v3(secret, tag, challenge, rank, nranks, pid=4242, host="intruder"):
    """A version 3 hello under the job's tag, answering challenge, signed with secret."""
    body = struct.pack("<IIiI64s96s16s", rank, nranks, pid, 0, host.encode(), b"host:intruder",
                       os.urandom(16))
    h = header(3, HELLO, tag, rank, 0, len(body) + 32)
    mac = hmac.new(secret, b"penny hello\0" + challenge[:16] + h + body + bytes(32),
                   "sha256").digest()
    return h + body + mac


def frame(typ, tag, payload, seq=0, version=3):
    """Any frame of the rendezvous (a stranger's challenge or ABORT)."""
    return header(version, typ, tag, 0, seq, len(payload)) + payload


def recv_all(s, n):
    """n bytes from s; SystemExit when the peer closes first."""
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise SystemExit("closed after %d of %d bytes" % (len(b), n))
        b += d
    return b


def bw_capture(port, timeout=10):
    """As a penny bw server on 127.0.0.1:port: the first client's hello
    into hello.bin ("ready" once listening)."""
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", port))
    l.listen(1)
    l.settimeout(timeout)
    open("ready", "w").close()
    c, _ = l.accept()
    c.settimeout(timeout)
    h = recv_all(c, 40)
    h += recv_all(c, struct.unpack_from("<Q", h, 32)[0])
    open("hello.bin", "wb").write(h)


def bw_start(s, h):
    """As a penny bw client on s: the hello h said and answered, then the
    two exchanges before the first size."""
    s.sendall(h)
    recv_all(s, len(h))
    s.sendall(b"\1\0\0\0")
    recv_all(s, 4)
    s.sendall(b"\1\0\0\0")
    recv_all(s, 4)
