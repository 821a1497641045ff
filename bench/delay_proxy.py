#!/usr/bin/env python3
"""A TCP relay that delays every chunk the client sends by DELAY_MS (a store that far per request), for benches on a
machine without netem (bench/RESULTS.md, "Subfolders listed concurrently"). One thread pair per connection; only the
standard library. usage: delay_proxy.py LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT DELAY_MS"""
import socket, sys, threading, time
lp, uh, up, d = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) / 1000
def pump(a, b, delay):
    try:
        while True:
            x = a.recv(65536)
            if not x: break
            if delay: time.sleep(delay)
            b.sendall(x)
    except OSError: pass
    finally:
        for s in (a, b):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", lp)); srv.listen(128)
while True:
    c, _ = srv.accept()
    u = socket.create_connection((uh, up))
    for s in (c, u): s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=pump, args=(c, u, d), daemon=True).start()
    threading.Thread(target=pump, args=(u, c, 0), daemon=True).start()
