#!/usr/bin/env python3
"""A hostile local user against reachd's socket: host requests for names whose lookups never finish.

usage: host_flood.py SOCKET status CONNECTIONS LINES PREFIX
       host_flood.py SOCKET subscribe CONNECTIONS LINES HOSTS PREFIX

Each of CONNECTIONS connections writes LINES requests at once (every name distinct: PREFIX-C-L-H.slow.test), as
fast as the daemon takes them, and prints one line per reply it gets: "reply TYPE CODE". It prints "connected"
once every connection is open, and runs until it is killed. PREFIX "literal" asks for IPv4 literals instead, every
one distinct (198.18.0.0/15, never contacted: reachd judges a literal by the kernel's route alone), which resolve
at once.
"""
import json
import select
import socket
import sys
import threading


def requests(connection, op, lines, hosts, prefix):
    for line in range(lines):
        if prefix == "literal":
            first = (connection * lines + line) * hosts
            names = [f"198.{18 + (i >> 16 & 1)}.{i >> 8 & 255}.{i & 255}" for i in range(first, first + hosts)]
        else:
            names = [f"{prefix}-{connection}-{line}-{host}.slow.test" for host in range(hosts)]
        yield (json.dumps({"op": op, "id": line, "hosts": names}) + "\n").encode()


def main():
    path, op = sys.argv[1], sys.argv[2]
    connections, lines = int(sys.argv[3]), int(sys.argv[4])
    hosts = int(sys.argv[5]) if op == "subscribe" else 1
    prefix = sys.argv[-1]
    sockets = []
    for connection in range(connections):
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
        sockets.append(client)
    print("connected", flush=True)
    for index, client in enumerate(sockets):
        payload = b"".join(requests(index, op, lines, hosts, prefix))
        threading.Thread(target=client.sendall, args=(payload,), daemon=True).start()
    buffers = {client: b"" for client in sockets}
    while sockets:
        ready, _, _ = select.select(sockets, [], [])
        for client in ready:
            chunk = client.recv(65536)
            if not chunk:
                sockets.remove(client)
                print("closed", flush=True)
                continue
            buffers[client] += chunk
            *complete, buffers[client] = buffers[client].split(b"\n")
            for line in complete:
                reply = json.loads(line)
                code = reply.get("error", {}).get("code", "-")
                print(f"reply {reply.get('type')} {code}", flush=True)


main()
