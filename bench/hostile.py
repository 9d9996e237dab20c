#!/usr/bin/env python3
"""Hostile local users against reachd (and a transfer instance), run by bench/hostile inside its namespace.
Attackers run as uid 65534 (nobody); the victim's requests as root. Prints one line per figure.

  idle      nobody holds N connections with half a request line: root's time to an answer, the daemon's CPU and
            descriptors while they are held, descriptors 3 s after nobody leaves.
  mixed     malformed lines, a 10 MiB line, 1,000 connect/close cycles, 200 slowloris, 50 subscribers to 200
            IPv4 literals each that never read, while the link flaps every 150 ms: RSS before, peak, 3 s after, and
            what a subscriber of root's that reads gets of the flaps (the internet's events and a host's).
  metrics   nobody holds N idle TCP connections to the metrics endpoint: does a scrape get through?
  watched   nobody watches as many IPv4 literals as one user may (N connections of 4,096, reading every reply and
            event) while the default route switches between eth0 and wwan0: root's internet and host events after
            each switch, RSS idle, subscribed and after the switches.
Sends nothing beyond Unix sockets and loopback."""
import argparse, json, os, resource, select, signal, socket, subprocess, sys, time

HZ = os.sysconf("SC_CLK_TCK")


def rss_kb(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def as_nobody(body):
    """Runs body() in a child process as uid/gid 65534; returns its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([]); os.setgid(65534); os.setuid(65534)
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            body()
        except BaseException as error:
            print(f"attacker: {error!r}", file=sys.stderr, flush=True)
        finally:
            os._exit(0)
    return pid


def hold_forever(socks):
    signal.pause()


def tcp(port):
    sock = socket.socket(socket.AF_INET)
    sock.connect(("127.0.0.1", port))
    return sock


def unix(path):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    return sock


def root_answer_ms(path, request, timeout=5.0):
    """Milliseconds until root's request is answered, or None (timeout, refused, closed)."""
    start = time.monotonic()
    try:
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall((json.dumps(request) + "\n").encode())
        line = sock.makefile("rb").readline()
        sock.close()
        if not line or b'"error"' in line:
            return None
    except OSError:
        return None
    return round((time.monotonic() - start) * 1000, 1)


def idle(args, pid, path, request):
    def attack():
        held = []
        for _ in range(args.connections):
            sock = socket.socket(socket.AF_UNIX)
            sock.settimeout(1)
            try:
                sock.connect(path)
                sock.send(b'{"op":"sta')
                held.append(sock)
            except socket.timeout:
                break  # the daemon no longer accepts: its backlog is full
            except OSError:
                pass
        open(args.ready, "w").close()
        hold_forever(held)
    fd0 = fds(pid)
    attacker = as_nobody(attack)
    deadline = time.monotonic() + 30
    while not os.path.exists(args.ready) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1)
    ticks0, started = cpu_ticks(pid), time.monotonic()
    answers = [root_answer_ms(path, request) for _ in range(3)]
    time.sleep(3)
    cpu = (cpu_ticks(pid) - ticks0) / HZ / (time.monotonic() - started) * 100
    held = fds(pid)
    os.kill(attacker, signal.SIGKILL); os.waitpid(attacker, 0)
    if os.path.exists(args.ready): os.unlink(args.ready)
    time.sleep(3)
    print(f"idle: {args.connections} connections of nobody: root answered in {answers} ms (None = no answer within 5 s); "
          f"daemon CPU {cpu:.0f}%; fds {fd0} idle, {held} under attack, {fds(pid)} 3 s after", flush=True)


def mixed(args, pid, path):
    hosts = [f"198.18.{i // 250}.{i % 250 + 1}" for i in range(1, 1001)]
    def subscribers():
        held = []
        for c in range(50):
            sock = unix(path)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall((json.dumps({"op": "subscribe", "hosts": [hosts[(c * 200 + i) % 1000] for i in range(200)]}) + "\n").encode())
            held.append(sock)
        hold_forever(held)
    def readers():
        held = []
        for c in range(50):
            sock = unix(path)
            sock.sendall((json.dumps({"op": "subscribe", "hosts": [hosts[(c * 200 + i) % 1000] for i in range(200)]}) + "\n").encode())
            held.append(sock)
        while True:
            for sock in held:
                sock.setblocking(False)
                try:
                    while sock.recv(65536): pass
                except OSError: pass
            time.sleep(0.05)
    def slowloris():
        held = [unix(path) for _ in range(200)]
        for _ in range(args.seconds):
            for sock in held:
                try: sock.send(b"x")
                except OSError: pass
            time.sleep(1)
        hold_forever(held)
    def garbage():
        end = time.monotonic() + args.seconds
        big = b"y" * (10 << 20) + b"\n"
        try:
            with unix(path) as sock:
                sock.sendall(big)
        except OSError:
            pass
        cycles = 0
        while time.monotonic() < end:
            try:
                with unix(path) as sock:
                    sock.sendall(b"not json\n{\"op\":\"nope\"}\n[1,2]\n")
                    cycles += 1
            except OSError:
                pass
            if cycles >= 1000: time.sleep(0.05)
    base, base_anonymous = rss_kb(pid), rss_kb(pid, "RssAnon")
    parts = {"subscribers": subscribers, "readers": readers, "slowloris": slowloris, "garbage": garbage}
    attackers = [as_nobody(parts[name]) for name in args.parts.split(",") if name in parts]
    # Root's subscriber reads every event: each flap moves the internet verdict, and a host's, between eth0 and wwan0.
    good = unix(path)
    good.sendall(b'{"op":"subscribe"}\n{"op":"subscribe","hosts":["198.51.100.7"]}\n')
    sequences, good_buffer = {}, b""
    while len(sequences) < 2:
        lines, good_buffer = read_lines(good, good_buffer)
        for line in lines:
            sequences[line["verdict"]["target"]] = [line["verdict"]["sequence"]]
    peak, end, down, flaps = base, time.monotonic() + args.seconds, True, 0
    next_flap = time.monotonic()
    while time.monotonic() < end:
        if "flap" in args.parts and time.monotonic() >= next_flap:
            subprocess.run(["ip", "link", "set", args.flap, "down" if down else "up"], check=True)
            down, next_flap, flaps = not down, next_flap + 0.15, flaps + 1
        peak = max(peak, rss_kb(pid))
        time.sleep(0.02)
    if not down:
        subprocess.run(["ip", "link", "set", args.flap, "up"], check=True)
        flaps += 1
    # The events of the last flaps: each within 5 s, or counted missing.
    good.settimeout(5)
    try:
        while any(len(seen) <= flaps for seen in sequences.values()):
            lines, good_buffer = read_lines(good, good_buffer)
            for line in lines:
                if line.get("type") == "event":
                    sequences[line["verdict"]["target"]].append(line["verdict"]["sequence"])
    except (OSError, EOFError):
        pass
    got = ", ".join(f"{target} {len(seen) - 1}" + ("" if all(b == a + 1 for a, b in zip(seen, seen[1:])) else " (with gaps)")
                    for target, seen in sorted(sequences.items()))
    for attacker in attackers:
        os.kill(attacker, signal.SIGKILL); os.waitpid(attacker, 0)
    time.sleep(3)
    print(f"mixed ({args.parts}): RSS {base / 1024:.1f} MB before, peak {peak / 1024:.1f} MB (+{(peak - base) / 1024:.1f}), "
          f"{rss_kb(pid) / 1024:.1f} MB 3 s after the clients left (+{(rss_kb(pid) - base) / 1024:.1f}, of it anonymous memory "
          f"+{(rss_kb(pid, 'RssAnon') - base_anonymous) / 1024:.1f}); "
          f"{flaps} flaps: a reading subscriber got events of {got}", flush=True)


def read_lines(sock, buffer=b""):
    """Blocks until at least one whole line came; returns the lines and what is left."""
    while b"\n" not in buffer:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise EOFError("reachd closed the connection")
        buffer += chunk
    *lines, rest = buffer.split(b"\n")
    return [json.loads(line) for line in lines], rest


def watched(args, pid, path):
    def subscriber():
        """Subscribes its connections to 4,096 literals each (198.18.0.0/15, never contacted: reachd judges a literal by
        the kernel's route alone) in 8 requests, each sent once the one before is answered (a build that closes a
        client whose queue holds a large reply takes them so too), then reads everything, forever."""
        socks, answered, refused = [], 0, 0
        for c in range(args.connections):
            sock, buffer = unix(path), b""
            for r in range(8):
                first = (c * 8 + r) * 512
                hosts = [f"198.{18 + (i >> 16 & 1)}.{i >> 8 & 255}.{i & 255}" for i in range(first, first + 512)]
                sock.sendall((json.dumps({"op": "subscribe", "id": r, "hosts": hosts}) + "\n").encode())
                lines, buffer = read_lines(sock, buffer)
                answered += sum(1 for line in lines if line.get("type") == "subscribed")
                refused += sum(1 for line in lines if line.get("type") == "error")
            socks.append(sock)
        with open(args.ready, "w") as ready:
            ready.write(f"{answered} {refused}")
        while True:
            for sock in select.select(socks, [], [])[0]:
                sock.recv(1 << 20)
    base = rss_kb(pid)
    attacker = as_nobody(subscriber)
    deadline = time.monotonic() + 120
    while not os.path.exists(args.ready) and time.monotonic() < deadline:
        time.sleep(0.05)
    answered, refused = open(args.ready).read().split()
    subscribed = rss_kb(pid)
    root = unix(path)
    root.sendall(b'{"op":"subscribe"}\n{"op":"subscribe","hosts":["198.51.100.7"]}\n')
    buffer, replies = b"", []
    while len(replies) < 2:
        lines, buffer = read_lines(root, buffer)
        replies += lines
    changer = subprocess.Popen(["ip", "-batch", "-"], stdin=subprocess.PIPE, text=True)
    internet, host, peak = [], [], subscribed
    for switch in range(args.switches):
        command = "route del default via 192.0.2.1 dev eth0" if switch % 2 == 0 else "route add default via 192.0.2.1 dev eth0 metric 100"
        started = time.monotonic()
        changer.stdin.write(command + "\n"); changer.stdin.flush()
        seen = {}
        while len(seen) < 2:
            lines, buffer = read_lines(root, buffer)
            for line in lines:
                if line.get("type") == "event":
                    seen.setdefault(line["verdict"]["target"], round((time.monotonic() - started) * 1000, 1))
        internet.append(seen["internet"]); host.append(seen["198.51.100.7"])
        peak = max(peak, rss_kb(pid))
        time.sleep(0.5)
    changer.stdin.close(); changer.wait()
    after = rss_kb(pid)
    os.kill(attacker, signal.SIGKILL); os.waitpid(attacker, 0)
    os.unlink(args.ready)
    median = lambda values: sorted(values)[len(values) // 2]
    print(f"watched: nobody's {args.connections} x 4,096 literals: {answered} subscribes answered, {refused} refused; "
          f"{args.switches} default-route switches: root's internet event median {median(internet)} ms, max {max(internet)}; "
          f"root's host event median {median(host)} ms, max {max(host)}; RSS idle {base / 1024:.1f} MB, subscribed "
          f"{subscribed / 1024:.1f} (+{(subscribed - base) / 1024:.1f}), peak {peak / 1024:.1f} (+{(peak - base) / 1024:.1f}), "
          f"after the switches {after / 1024:.1f} (+{(after - base) / 1024:.1f})", flush=True)


def metrics(args, pid, port):
    def attack():
        held = []
        for _ in range(args.connections):
            try:
                held.append(tcp(port))
            except OSError:
                pass
        open(args.ready, "w").close()
        hold_forever(held)
    attacker = as_nobody(attack)
    deadline = time.monotonic() + 30
    while not os.path.exists(args.ready) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1)
    results = []
    for _ in range(3):
        start = time.monotonic()
        try:
            with socket.socket(socket.AF_INET) as sock:
                sock.settimeout(5)
                sock.connect(("127.0.0.1", port))
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                ok = sock.recv(12).startswith(b"HTTP/1.1 200")
            results.append(round((time.monotonic() - start) * 1000, 1) if ok else None)
        except OSError:
            results.append(None)
    os.kill(attacker, signal.SIGKILL); os.waitpid(attacker, 0)
    if os.path.exists(args.ready): os.unlink(args.ready)
    print(f"metrics: {args.connections} idle TCP connections of nobody: scrapes answered in {results} ms (None = failed)", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["idle", "mixed", "metrics", "watched"])
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--socket")
    parser.add_argument("--transfers", action="store_true", help="the socket is a transfer instance's")
    parser.add_argument("--port", type=int)
    parser.add_argument("--connections", type=int, default=1500)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--switches", type=int, default=10, help="watched: default-route switches")
    parser.add_argument("--flap", default="eth0p")
    parser.add_argument("--parts", default="subscribers,slowloris,garbage,flap", help="mixed: which attacks run")
    parser.add_argument("--ready", default=f"/tmp/hostile-ready-{os.getpid()}")
    args = parser.parse_args()
    if args.scenario == "idle":
        idle(args, args.pid, args.socket, {"op": "list"} if args.transfers else {"op": "status"})
    elif args.scenario == "mixed":
        mixed(args, args.pid, args.socket)
    elif args.scenario == "watched":
        watched(args, args.pid, args.socket)
    else:
        metrics(args, args.pid, args.port)


if __name__ == "__main__":
    sys.exit(main())
