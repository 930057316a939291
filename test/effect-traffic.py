#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Bounded TCP traffic for the swap-effect tests, run inside network namespaces the test made.
  effect-traffic.py serve ADDR PORT SECONDS
      accepts connections on ADDR:PORT and reads them to the end; exits after SECONDS.
  effect-traffic.py send ADDR PORT CC CONNECTIONS BYTES SECONDS
      opens CONNECTIONS connections to ADDR:PORT, each with congestion control CC
      (TCP_CONGESTION; "-": the namespace's default), sends BYTES on each at once, prints
      "ready" when all were sent (or SECONDS passed), keeps them open until a line on stdin
      (or SECONDS more), then closes them. Never more than BYTES a connection, never longer
      than twice SECONDS."""
import socket
import sys
import threading
import time


def serve(addr, port, seconds):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(64)
    s.settimeout(1)
    end = time.monotonic() + seconds

    def drain(c):
        c.settimeout(max(1, end - time.monotonic()))
        try:
            while c.recv(1 << 16):
                pass
        except OSError:
            pass
        c.close()

    while time.monotonic() < end:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        threading.Thread(target=drain, args=(c,), daemon=True).start()


def send(addr, port, cc, n, nbytes, seconds):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    conns = []
    for _ in range(n):
        c = socket.socket(fam, socket.SOCK_STREAM)
        if cc != "-":
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        c.settimeout(seconds)
        c.connect((addr, port))
        conns.append(c)
    chunk = b"\0" * (1 << 16)

    def pump(c):
        left = nbytes
        end = time.monotonic() + seconds
        try:
            while left > 0 and time.monotonic() < end:
                left -= c.send(chunk[: min(len(chunk), left)])
        except OSError:
            pass

    threads = [threading.Thread(target=pump, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 1)
    print("ready", flush=True)
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), done.set()), daemon=True).start()
    done.wait(seconds)
    for c in conns:
        c.close()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        send(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6]),
             float(sys.argv[7]))
