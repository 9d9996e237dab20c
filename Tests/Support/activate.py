#!/usr/bin/env python3
"""What systemd does for a .socket unit: bind and listen on argv[1], pass the socket as fd 3 with
LISTEN_FDS=1 and LISTEN_PID of the service, then exec the service (argv[2:])."""
import os
import socket
import sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(16)
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ["LISTEN_FDS"] = "1"
os.environ["LISTEN_PID"] = str(os.getpid())
os.execv(sys.argv[2], sys.argv[2:])
