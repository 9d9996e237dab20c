#!/usr/bin/python3
"""bench/fulltable's driver, inside the benchmark's namespace (see bench/fulltable).

The monitors, one after the other at each table size, each a fresh process:
  reachd  the daemon; a subscriber on its socket stamps every line as it arrives
  before  another reachd binary (--before), the same way, up to --before-max-routes (a before/after run)
  glib    Tests/Support/gio_monitor.py with GIO_USE_NETWORK_MONITOR=netlink (GLib's own monitor, in-process)
First answer: reachd from exec to the subscriber's first reply; GLib from g_network_monitor_get_default() to
its answer, inside the program (python's own start-up is left out). RSS: the daemon, or the whole python+GLib
process. Churn: --churn `route replace` commands on the table's prefixes, each a real change (each pass over
the table moves every prefix to the other uplink's gateway), from one `ip -batch`; CPU is the monitor's user+system time from the first command until it is idle
again; false events are signals/events while no verdict changed. Failover: eth0's default route removed,
time to the monitor's next event (then put back), idle (median of 5) and right after the churn.
All times on CLOCK_MONOTONIC."""
import argparse
import json
import os
import select
import statistics
import subprocess
import time

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Support", "gio_monitor.py")
# A subscriber on reachd's socket: connects as soon as the socket answers, stamps each line as it arrives.
SOCKET_WATCHER = """
import json, socket, sys, time
while True:
    try:
        client = socket.socket(socket.AF_UNIX)
        client.connect(sys.argv[1])
        break
    except OSError:
        client.close()
        time.sleep(0.001)
client.sendall(b'{"op": "subscribe"}\\n')
for line in client.makefile("rb"):
    print(json.dumps({"t": time.monotonic(), "reply": json.loads(line)}), flush=True)
"""
DEFAULT_ETH0 = "default via 192.0.2.1 dev eth0 metric 100"
TICK = os.sysconf("SC_CLK_TCK")


class Lines:
    """JSON lines from a process's stdout, read with a deadline."""

    def __init__(self, stream):
        self.fd = stream.fileno()
        self.buffer = b""

    def next(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError("monitor output closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def drain(self, quiet):
        """Every line until none comes for `quiet` seconds."""
        lines = []
        while (line := self.next(quiet)) is not None:
            lines.append(line)
        return lines


class Monitor:
    """A monitor under test: `events` are the lines that report a change; `pid` the process measured."""

    def __init__(self, name, args, work):
        self.name = name
        self.processes = []
        started = time.monotonic()
        if name in ("reachd", "before"):
            socket_path = work + "/reachd.sock"
            if os.path.exists(socket_path):
                os.unlink(socket_path)
            daemon = subprocess.Popen([args.reachd if name == "reachd" else args.before, "--socket", socket_path, "--bus", "none", "--networkmanager",
                                       "none", "--log-level", "warning"], stdout=subprocess.DEVNULL)
            watcher = subprocess.Popen(["/usr/bin/python3", "-c", SOCKET_WATCHER, socket_path], stdout=subprocess.PIPE)
            self.processes = [watcher, daemon]
            self.pid = daemon.pid
            self.lines = Lines(watcher.stdout)
            first = self.lines.next(300)
            self.first_answer = first["t"] - started
        else:
            env = dict(os.environ, GIO_USE_NETWORK_MONITOR="netlink")
            probe = subprocess.Popen(["/usr/bin/python3", PROBE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
            self.processes = [probe]
            self.pid = probe.pid
            self.lines = Lines(probe.stdout)
            first = self.lines.next(300)
            self.first_answer = first["init_ms"] / 1000

    def is_event(self, line):
        if self.name != "glib":
            return line["reply"].get("type") == "event"
        return line.get("event") == "changed"

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK

    def memory_mb(self, field):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def is_failover(self, line):
        """reachd's event names the new interface; GLib's signal cannot say which change it reports."""
        if self.name != "glib":
            return (line["reply"].get("verdict") or {}).get("interface") == "wwan0"
        return True

    def next_failover(self, timeout):
        """The failover's event (or None within `timeout` s), and how many other events came before it."""
        others = 0
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            line = self.lines.next(left)
            if line is not None and self.is_event(line):
                if self.is_failover(line):
                    return line, others
                others += 1
        return None, others

    def settle(self):
        """Waits until the monitor has been idle (CPU and output) for 1.5 s, longer than GLib's 1-second
        timer before it dumps the routes again after a change; returns its events."""
        events = []
        last = self.cpu_seconds()
        while True:
            events += [line for line in self.lines.drain(1.5) if self.is_event(line)]
            now = self.cpu_seconds()
            if now == last:
                return events
            last = now

    def stop(self):
        for process in self.processes:
            process.terminate()
            process.wait()


def ip_batch(commands):
    subprocess.run(["ip", "-batch", "-"], input="".join(c + "\n" for c in commands).encode(), check=True)


def prefix(n):
    return "%d.%d.%d.0/24" % (10 + n // 65536, n // 256 % 256, n % 256)


def failover(monitor):
    """eth0's default route removed: seconds to the monitor's failover event (None: none within 15 s) and the
    other events before it; then the route is put back and the monitor settles."""
    start = time.monotonic()
    subprocess.run(["ip", "route", "del"] + DEFAULT_ETH0.split(), check=True)
    event, others = monitor.next_failover(15)
    subprocess.run(["ip", "route", "add"] + DEFAULT_ETH0.split(), check=True)
    monitor.settle()
    return (None if event is None else event["t"] - start), others


def measure(name, args, routes):
    monitor = Monitor(name, args, args.work)
    try:
        monitor.settle()
        result = {"first": monitor.first_answer, "rss": monitor.memory_mb("VmRSS")}
        result["failover"] = statistics.median(
            [f if f is not None else float("inf") for f, _ in (failover(monitor) for _ in range(5))])
        if routes and args.churn:
            # Every command is a real change: the first pass over the table moves each prefix to wwan0's
            # gateway, the next back to eth0's, and so on.
            churn = ["route replace %s via %s" % (prefix(i % routes), "203.0.113.1" if i // routes % 2 == 0 else "192.0.2.1")
                     for i in range(args.churn)]
            cpu = monitor.cpu_seconds()
            ip_batch(churn)
            # Events already out, before the failover: the churn's.
            early = [line for line in monitor.lines.drain(0.001) if monitor.is_event(line)]
            result["after_churn"], others = failover(monitor)
            # failover() settled the monitor: its CPU time now includes everything the churn cost.
            result["churn_cpu"] = monitor.cpu_seconds() - cpu
            result["false_events"] = len(early) + others
        result["peak"] = monitor.memory_mb("VmHWM")
        return result
    finally:
        monitor.stop()


def show(routes, name, r):
    def ms(value):
        return "missed (>15 s)" if value is None or value == float("inf") else "%.1f ms" % (value * 1000)
    line = "%9d routes  %-6s first answer %8.3f s  RSS %6.1f MB (peak %6.1f)  failover %s" % (
        routes, name, r["first"], r["rss"], r["peak"], ms(r["failover"]))
    if "churn_cpu" in r:
        line += "  | churn: CPU %.2f s, false events %d, failover right after %s" % (
            r["churn_cpu"], r["false_events"], ms(r["after_churn"]))
    print(line, flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reachd", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--routes", default="10000,100000,1000000")
    parser.add_argument("--churn", type=int, default=100000)
    parser.add_argument("--before", help="another reachd binary to measure beside (before/after)")
    parser.add_argument("--before-max-routes", type=int, default=300000,
                        help="table sizes above this skip --before (the previous reachd took 42 s to start with 300,000)")
    parser.add_argument("--monitors", default="reachd,glib")
    args = parser.parse_args()
    monitors = args.monitors.split(",")
    if args.before:
        monitors.insert(1, "before")
    sizes = [0] + sorted(int(n) for n in args.routes.split(","))
    loaded = 0
    for routes in sizes:
        ip_batch(["route add %s via 192.0.2.1" % prefix(i) for i in range(loaded, routes)])
        loaded = routes
        for name in monitors:
            if name == "before" and routes > args.before_max_routes:
                continue
            show(routes, name, measure(name, args, routes))


main()
