#!/usr/bin/env python3
"""Measures one emulated link of the testbed over TCP (standard library only).

    linkprobe.py serve ADDR PORT            accept one connection: echo ping-pong, then sink a stream
    linkprobe.py probe ADDR PORT BYTES      connect, 200 one-byte round trips, then send BYTES

`probe` prints one JSON line: {"rtt_s": median round trip, "bytes": BYTES, "seconds": s,
"goodput_bps": payload bits/s}. The stream is timed from the first byte sent to the server's
acknowledgement that the last byte arrived, so the sender's socket buffer does not flatter it.
"""
import json
import socket
import statistics
import sys
import time

ROUNDS = 200


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise SystemExit("linkprobe: connection closed early")
        buf += chunk
    return bytes(buf)


def serve(addr, port):
    with socket.create_server((addr, port)) as ls:
        ls.settimeout(30)
        s, _ = ls.accept()
        with s:
            s.settimeout(60)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for _ in range(ROUNDS):
                s.sendall(recv_exact(s, 1))
            total = int.from_bytes(recv_exact(s, 8), "big")
            got = 0
            while got < total:
                chunk = s.recv(min(1 << 20, total - got))
                if not chunk:
                    raise SystemExit("linkprobe: stream closed early")
                got += len(chunk)
            s.sendall(b"k")


def probe(addr, port, nbytes):
    deadline = time.monotonic() + 10
    while True:
        try:
            s = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    with s:
        s.settimeout(60)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        rtts = []
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            s.sendall(b"p")
            recv_exact(s, 1)
            rtts.append(time.perf_counter() - t0)
        s.sendall(nbytes.to_bytes(8, "big"))
        block = b"\0" * (1 << 20)
        t0 = time.perf_counter()
        left = nbytes
        while left > 0:
            n = min(left, len(block))
            s.sendall(block[:n])
            left -= n
        recv_exact(s, 1)
        dt = time.perf_counter() - t0
    print(json.dumps({"rtt_s": statistics.median(rtts), "bytes": nbytes, "seconds": dt, "goodput_bps": nbytes * 8 / dt}))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "probe":
        probe(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
