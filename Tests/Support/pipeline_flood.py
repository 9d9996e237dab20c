"""A client that pipelines requests and never reads the replies: prints how it ended.

usage: pipeline_flood.py SOCKET COUNT
Each request is a ping whose id is 1,000 bytes long (the reply echoes it). Prints "disconnected after N"
when the daemon closes the connection, "all sent" if every request went out without that.
"""
import socket, sys

path, count = sys.argv[1], int(sys.argv[2])
client = socket.socket(socket.AF_UNIX)
client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
client.connect(path)
client.settimeout(60)
line = b'{"op":"ping","id":"' + b"x" * 1000 + b'"}\n'
sent = 0
try:
    for _ in range(count):
        client.sendall(line)
        sent += 1
    print("all sent", flush=True)
except (BrokenPipeError, ConnectionResetError) as error:
    print(f"disconnected after {sent}", flush=True)
except socket.timeout:
    print(f"blocked after {sent}", flush=True)
