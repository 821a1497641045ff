#!/usr/bin/python3
"""A plain TCP relay for the network-limit test (tests/network_limit_test.cc): listens on HOST:0, writes the port it
got to PORT_FILE (a temporary name, then renamed), and copies bytes both ways between every connection and
TARGET_HOST:TARGET_PORT. It stands between the suite's S3 gateway (on 127.0.0.1) and an agent in a network namespace
that can reach only the host side of its veth pair; it changes no byte.

Usage: /usr/bin/python3 tcp_relay.py HOST PORT_FILE TARGET_HOST TARGET_PORT
"""
import os
import socket
import sys
import threading


def pipe(src, dst):
    try:
        while True:
            data = src.recv(1 << 16)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main():
    host, port_file, target_host, target_port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, 0))
    listener.listen(128)
    with open(port_file + ".tmp", "w") as f:
        f.write(f"{listener.getsockname()[1]}\n")
    os.rename(port_file + ".tmp", port_file)
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection((target_host, target_port))
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()


if __name__ == "__main__":
    main()
