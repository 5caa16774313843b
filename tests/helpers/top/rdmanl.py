#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""RDMA netlink replies as the kernel sends them (linux/rdma_netlink.h), for
penny top's process view: a device list (RDMA_NLDEV_CMD_GET) and QP lists
(RDMA_NLDEV_CMD_RES_QP_GET) written to a file, the replay file of a
replayed sysfs root (penny/rdma-nldev) or a fuzz seed.

  rdmanl.py FILE DEV=INDEX ... [-- DEV:PID[/COMM]:TYPE[xCOUNT] ...] [--error ERRNO]

An owner of the form DEV:k=NAME:TYPE is a kernel owner (RES_KERN_NAME).
TYPE is a QP type number (2 RC, 4 UD, 1 GSI, ...)."""
import struct
import sys

NLDEV = 5
DEV_GET = (NLDEV << 10) + 1
QP_GET = (NLDEV << 10) + 10
A_DEV_INDEX, A_DEV_NAME, A_PORT = 1, 2, 3
A_RES_QP, A_RES_QP_ENTRY, A_LQPN, A_TYPE, A_STATE, A_PID, A_KERN = 19, 20, 21, 26, 27, 28, 29
NLA_F_NESTED = 0x8000


def attr(t, payload):
    a = struct.pack("=HH", 4 + len(payload), t) + payload
    return a + b"\0" * (-len(a) % 4)


def u32(t, v):
    return attr(t, struct.pack("=I", v))


def u8(t, v):
    return attr(t, struct.pack("=B", v))


def string(t, s):
    return attr(t, s.encode() + b"\0")


def msg(t, body, seq=1, flags=2):  # NLM_F_MULTI
    return struct.pack("=IHHII", 16 + len(body), t, flags, seq, 0) + body


def done(seq=1):
    return msg(3, struct.pack("=i", 0), seq)


def error(err, seq=1):
    return msg(2, struct.pack("=i", -err) + struct.pack("=IHHII", 16, 0, 0, seq, 0), seq)


def main(argv):
    out, rest = argv[0], argv[1:]
    devs, owners, err = [], [], None
    while rest:
        a = rest.pop(0)
        if a == "--error":
            err = int(rest.pop(0))
        elif a == "--":
            continue
        elif "=" in a and ":" not in a:
            n, i = a.split("=")
            devs.append((n, int(i)))
        else:
            owners.append(a)
    data = b"".join(msg(DEV_GET, u32(A_DEV_INDEX, i) + string(A_DEV_NAME, n)) for n, i in devs)
    data += done()
    qpn = 100
    for n, i in devs:
        if err is not None:
            data += error(err)
            continue
        entries = b""
        for o in owners:
            dev, who, typ = o.split(":")
            if dev != n:
                continue
            count = 1
            if "x" in typ:
                typ, count = typ.split("x")
            for _ in range(int(count)):
                e = u32(A_PORT, 1) + u32(A_LQPN, qpn) + u8(A_TYPE, int(typ)) + u8(A_STATE, 3)
                if who.startswith("k="):
                    e += string(A_KERN, who[2:])
                else:
                    e += u32(A_PID, int(who.split("/")[0]))
                entries += attr(A_RES_QP_ENTRY | NLA_F_NESTED, e)
                qpn += 1
        body = u32(A_DEV_INDEX, i) + string(A_DEV_NAME, n) + attr(A_RES_QP | NLA_F_NESTED, entries)
        data += msg(QP_GET, body) + done()
    with open(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main(sys.argv[1:])
