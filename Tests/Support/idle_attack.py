#!/usr/bin/env python3
"""A hostile local user's idle connections: opens COUNT connections to each target and holds them, each with
half a request line sent (or nothing, with --silent), until killed. A second after they are open it prints, per
target, 'open: TARGET kept K of N' (the connections the daemon has not closed) and 'refused: TARGET LINE' (the
first line a closed one was told, if any), then 'ready'. Targets: unix:PATH:COUNT or tcp:HOST:PORT:COUNT. Sends
no traffic beyond the given sockets (loopback and Unix sockets only)."""
import argparse
import resource
import socket
import sys
import time


def connect(target):
    kind, rest = target.split(":", 1)
    if kind == "unix":
        path, count = rest.rsplit(":", 1)
        return [("unix", path)] * int(count), target
    host, port, count = rest.rsplit(":", 2)
    return [("tcp", (host, int(port)))] * int(count), target


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("targets", nargs="+")
    parser.add_argument("--silent", action="store_true", help="send nothing at all")
    parser.add_argument("--ready", help="a file written once every connection is open")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    held = []
    report = []
    for target in args.targets:
        addresses, name = connect(target)
        opened = []
        for kind, address in addresses:
            sock = socket.socket(socket.AF_UNIX if kind == "unix" else socket.AF_INET)
            try:
                sock.connect(address)
                if not args.silent:
                    sock.send(b'{"op":"sta' if kind == "unix" else b"GET /metr")
                opened.append(sock)
            except OSError:
                sock.close()
        held.extend(opened)
        report.append((name, opened, len(addresses)))
    # Connections the daemon refused are closed by it: count what is still open after a moment.
    time.sleep(1)
    for name, opened, wanted in report:
        alive, refusal = 0, None
        for sock in opened:
            sock.setblocking(False)
            try:
                said = sock.recv(4096)  # a refusal line or the end: closed by the daemon
                if said and refusal is None:
                    refusal = said.split(b"\n")[0].decode(errors="replace")
            except BlockingIOError:
                alive += 1
            except OSError:
                pass
        print(f"open: {name} kept {alive} of {wanted}", flush=True)
        if refusal is not None:
            print(f"refused: {name} {refusal}", flush=True)
    print("ready", flush=True)
    if args.ready:
        with open(args.ready, "w") as ready:
            ready.write("ready\n")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
