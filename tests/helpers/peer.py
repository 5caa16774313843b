# SPDX-License-Identifier: MIT
# For the tests' Python peers (strangers, old-protocol clients): connect to
# a penny listener on 127.0.0.1 that may not be up yet.
import socket
import time


def conn(port, tries=100):
    for _ in range(tries):
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    raise SystemExit("no listener")
