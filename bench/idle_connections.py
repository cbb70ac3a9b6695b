#!/usr/bin/env python3
"""What an idle HTTP connection costs spaced: starts a throwaway spaced (the integration
harness, build/ of this tree), opens N connections that send half a header (from
127.0.0.2) and then N authenticated keep-alive connections that sit idle after one
request, and prints spaced's VmRSS and thread count before and with them.

  sudo python3 bench/idle_connections.py [N]      (default 1000; needs root)
"""

import os
import resource
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from spaced_harness import Spaced  # noqa: E402


def status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "Threads"):
                out[k] = int(v.split()[0])
    return out


def settle(pid, want_threads, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = status(pid)
        if s["Threads"] >= want_threads:
            break
        time.sleep(0.2)
    time.sleep(1.0)
    return status(pid)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sp = Spaced(extra_args=["--header-timeout", "300", "--max-connections-per-ip", "8192",
                            "--max-unauthenticated", "8000", "--max-connections", "8192"])
    socks = []
    try:
        sp.start()
        pid = sp.proc.pid
        time.sleep(2)
        base = status(pid)
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.2", 0))
            s.connect(("127.0.0.1", sp.port))
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            socks.append(s)
        half = settle(pid, base["Threads"] + n)
        req = ("GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % sp.key).encode()
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", sp.port))
            s.sendall(req)
            s.recv(65536)
            socks.append(s)
        both = settle(pid, base["Threads"] + 2 * n)
        print("N=%d" % n)
        print("baseline:                      VmRSS %6d KiB  threads %5d" % (base["VmRSS"], base["Threads"]))
        print("+ N half-open (unauth):        VmRSS %6d KiB  threads %5d  -> %.1f KiB, %.2f threads each" % (
            half["VmRSS"], half["Threads"], (half["VmRSS"] - base["VmRSS"]) / n, (half["Threads"] - base["Threads"]) / n))
        print("+ N idle keep-alive (authed):  VmRSS %6d KiB  threads %5d  -> %.1f KiB, %.2f threads each" % (
            both["VmRSS"], both["Threads"], (both["VmRSS"] - half["VmRSS"]) / n, (both["Threads"] - half["Threads"]) / n))
    finally:
        for s in socks:
            s.close()
        sp.cleanup()


if __name__ == "__main__":
    main()
