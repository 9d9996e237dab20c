#!/usr/bin/python3
"""bench/gio's driver, inside the benchmark's namespace (eth0 up with an address, no default route).

Latency: each round adds (or deletes) eth0's default route through one `ip -batch` process, and takes the
time from just before the command to the moment each observer saw the change, all on CLOCK_MONOTONIC:
  module   Tests/Support/gio_monitor.py with the module (reachd on the private bus): network-changed
  netlink  the same program with GIO_USE_NETWORK_MONITOR=netlink (GLib's own monitor): network-changed
  socket   a client subscribed on reachd's socket: the event line
Start-up: the GLib program's g_network_monitor_get_default() (in-process) and the whole program (python3,
import gi, get_default, exit), median over --starts runs, without the module, with it and reachd running,
with it and reachd gone (not activatable), and with it and reachd activatable but stopped (D-Bus starts it).
"""
import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import time

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Support", "gio_monitor.py")
# A subscriber on reachd's socket that stamps each line as it arrives.
SOCKET_WATCHER = """
import json, socket, sys, time
client = socket.socket(socket.AF_UNIX)
client.connect(sys.argv[1])
client.sendall(b'{"op": "subscribe"}\\n')
for line in client.makefile("rb"):
    print(json.dumps({"t": time.monotonic(), "reply": json.loads(line)}), flush=True)
"""
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={work}/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{work}/services</servicedir>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
"""


class Lines:
    """JSON lines from a process's stdout, read with a deadline."""

    def __init__(self, stream):
        self.fd = stream.fileno()
        self.buffer = b""

    def next(self, timeout=30):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise TimeoutError("no line within %.0f s" % timeout)
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError("closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        os.makedirs(self.work + "/services", exist_ok=True)
        os.makedirs(self.work + "/sys/class/net", exist_ok=True)
        with open(self.work + "/bus.conf", "w") as f:
            f.write(BUS_CONFIG.format(work=self.work))
        self.bus = subprocess.Popen(["dbus-daemon", "--config-file=" + self.work + "/bus.conf", "--nofork",
                                     "--print-address=1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.address = self.bus.stdout.readline().decode().strip()
        self.reachd_command = [args.reachd, "--bus", "session", "--socket", self.work + "/reachd.sock",
                               "--sysfs-root", self.work + "/sys", "--networkmanager", "none"]
        self.reachd = None
        self.children = []
        # Whether reachd is started by D-Bus activation (then stopped after each program).
        self.activatable = False

    def environment(self, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GIO_", "G_"))}
        env.update(DBUS_SYSTEM_BUS_ADDRESS=self.address, DBUS_SESSION_BUS_ADDRESS=self.address)
        env.update(extra)
        return env

    def reachd_on_bus(self):
        out = subprocess.run(["dbus-send", "--bus=" + self.address, "--print-reply", "--dest=org.freedesktop.DBus",
                              "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                              "string:org.reachd.Reachability1"], capture_output=True, text=True).stdout
        return "boolean true" in out

    def wait_until(self, condition, what, timeout=30):
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(what)
            time.sleep(0.01)

    def start_reachd(self):
        self.reachd = subprocess.Popen(self.reachd_command, env=self.environment(), stderr=subprocess.DEVNULL)
        self.wait_until(self.reachd_on_bus, "reachd on the bus")

    def stop_reachd(self):
        if self.reachd is not None:
            self.reachd.terminate()
            self.reachd.wait()
            self.reachd = None
        self.stop_activated()
        self.wait_until(lambda: not self.reachd_on_bus(), "reachd off the bus")

    def stop_activated(self):
        out = subprocess.run(["dbus-send", "--bus=" + self.address, "--print-reply", "--dest=org.freedesktop.DBus",
                              "/org/freedesktop/DBus", "org.freedesktop.DBus.GetConnectionUnixProcessID",
                              "string:org.reachd.Reachability1"], capture_output=True, text=True).stdout.split()
        if out and out[-1].isdigit():
            os.kill(int(out[-1]), signal.SIGTERM)

    def probe(self, **env):
        process = subprocess.Popen(["/usr/bin/python3", PROBE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   env=self.environment(**env))
        self.children.append(process)
        lines = Lines(process.stdout)
        return process, lines, lines.next()

    # --- Latency -----------------------------------------------------------------------------------------

    def latency(self):
        module, module_lines, ready = self.probe(GIO_EXTRA_MODULES=self.args.module_dir)
        assert ready["type"] == "ReachdNetworkMonitor", ready
        netlink, netlink_lines, ready = self.probe(GIO_USE_NETWORK_MONITOR="netlink")
        assert ready["type"] == "GNetworkMonitorNetlink", ready
        watcher = subprocess.Popen(["/usr/bin/python3", "-c", SOCKET_WATCHER, self.work + "/reachd.sock"],
                                   stdout=subprocess.PIPE)
        self.children.append(watcher)
        socket_lines = Lines(watcher.stdout)
        assert socket_lines.next()["reply"]["type"] == "subscribed"
        ip = subprocess.Popen(["ip", "-batch", "-"], stdin=subprocess.PIPE, text=True)

        results = {"module": [], "netlink": [], "socket": []}
        for round in range(self.args.rounds):
            command = "route del default via 192.0.2.1 dev eth0" if round % 2 else "route add default via 192.0.2.1 dev eth0"
            available = round % 2 == 0
            started = time.monotonic()
            ip.stdin.write(command + "\n")
            ip.stdin.flush()
            results["module"].append(self.changed(module_lines, available) - started)
            results["netlink"].append(self.changed(netlink_lines, available) - started)
            results["socket"].append(self.event(socket_lines, available) - started)
        ip.stdin.close()
        ip.wait()
        watcher.kill()
        watcher.wait()
        for process in (module, netlink):
            process.stdin.close()
            process.wait()
        print("\nlatency from a default route change to the change seen (%d rounds, add and delete):" % self.args.rounds)
        for name, label in (("module", "GIO module (reachd over D-Bus), network-changed"),
                            ("netlink", "GLib's netlink monitor, network-changed"),
                            ("socket", "reachd's socket, event line")):
            values = sorted(v * 1000 for v in results[name])
            print("  %-48s median %7.2f ms   p90 %7.2f ms   max %7.2f ms" % (
                label, statistics.median(values), values[int(len(values) * 0.9) - 1], values[-1]))

    @staticmethod
    def changed(lines, available):
        """The time of the network-changed that reports `available` (GLib's monitor may signal more than once)."""
        while True:
            line = lines.next()
            if line["event"] == "changed" and line["available"] == available:
                return line["t"]

    @staticmethod
    def event(lines, available):
        while True:
            line = lines.next()
            if line["reply"].get("type") == "event" and line["reply"]["verdict"]["reachable"] == available:
                return line["t"]

    # --- Start-up ----------------------------------------------------------------------------------------

    def startup(self, label, **env):
        init, whole, types = [], [], set()
        for _ in range(self.args.starts):
            started = time.monotonic()
            process, lines, ready = self.probe(**env)
            process.stdin.close()
            process.wait()
            whole.append((time.monotonic() - started) * 1000)
            init.append(ready["init_ms"])
            types.add(ready["type"])
            if self.activatable:
                self.stop_reachd()
        print("  %-48s get_default %7.2f ms   program %7.1f ms   (%s)" % (
            label, statistics.median(init), statistics.median(whole), ", ".join(sorted(types))))

    def startups(self):
        module = self.args.module_dir
        print("\nstart-up of a GLib program (python3-gi), median of %d:" % self.args.starts)
        # One run unmeasured: python3, GLib and the module into the page cache.
        process, _, _ = self.probe(GIO_EXTRA_MODULES=module)
        process.stdin.close()
        process.wait()
        self.startup("without the module")
        self.startup("with the module, reachd running", GIO_EXTRA_MODULES=module)
        self.stop_reachd()
        self.startup("with the module, reachd gone", GIO_EXTRA_MODULES=module)
        with open(self.work + "/services/org.reachd.Reachability1.service", "w") as f:
            f.write("[D-BUS Service]\nName=org.reachd.Reachability1\nExec=/usr/bin/env DBUS_SESSION_BUS_ADDRESS=%s %s\n"
                    % (self.address, " ".join(self.reachd_command)))
        self.activatable = True
        self.startup("with the module, reachd activated", GIO_EXTRA_MODULES=module)

    def run(self):
        try:
            self.start_reachd()
            self.latency()
            self.startups()
        finally:
            for process in self.children:
                if process.poll() is None:
                    process.kill()
                    process.wait()
            if self.reachd is not None:
                self.reachd.terminate()
                self.reachd.wait()
            self.stop_activated()
            self.bus.terminate()
            self.bus.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reachd", required=True)
    parser.add_argument("--module-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--starts", type=int, default=20)
    Bench(parser.parse_args()).run()


main()
