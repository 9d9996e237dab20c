#!/usr/bin/python3
"""Writes the order in which the linker lays out the daemons' code (packaging/hot-functions.sections).

The kernel maps a program's code in 64 KiB blocks around each page it touches (fault-around), so code spread
thinly over the binary costs resident memory far beyond its size: an idle reachd ran about 1.3 MB of code
and had 9 to 10 MB of its text resident. Laid out together (the linker's --symbol-ordering-file, with every
function in a section of its own), that code takes fewer blocks: `make deb` compiles every function into a section of its own and hands this
file to the linker (gold's --section-ordering-file), which puts these sections first. Once serving, a daemon
unmaps the code its start-up ran (ReadOnlyPages), so what stays resident is the code it runs after start-up:
that comes first, then the code only start-up ran.

This runs each daemon of BIN under valgrind's callgrind (a copy without debug information, which valgrind
cannot always read) through the work an idle daemon does: start-up, a client's request, a link flap and a
route change. It lists every function that ran, by its symbol name: those that ran after start-up (a
callgrind dump splits the profile once the daemon idles after start) before those that ran only in it, each
group the first run first, and writes the union for reachd and reachd-transfers, as section names. Needs root (a network namespace) and valgrind.
Usage: bench/hot-functions.py BIN [OUTPUT]   (BIN: make deb's build, .build-deb/swift/release)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def run(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def wait_for(path, seconds=120):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(f"hot-functions: {path} did not appear in {seconds} s")
        time.sleep(0.1)


def executed(profile, binary_name):
    """The functions of `binary_name` that ran, in the order callgrind first names them."""
    names, objects = {}, {}
    lines = open(profile, errors="replace").read().splitlines()
    for line in lines:
        if m := re.match(r"^c?fn=\((\d+)\) (.*)$", line):
            names[m.group(1)] = m.group(2)
        if m := re.match(r"^c?ob=\((\d+)\) (.*)$", line):
            objects[m.group(1)] = m.group(2)
    current, seen = None, {}
    for line in lines:
        if m := re.match(r"^ob=\((\d+)\)", line):
            current = objects[m.group(1)]
        elif (m := re.match(r"^fn=\((\d+)\)", line)) and current and current.endswith(binary_name):
            seen.setdefault(names[m.group(1)].split("'")[0], None)
    return list(seen)


def symbols(binary):
    """Demangled C++ names back to the symbols the linker knows; Swift's names come out of callgrind as symbols."""
    text = run("nm", "--defined-only", binary, capture_output=True, text=True).stdout
    defined = [line.split()[2] for line in text.splitlines() if len(line.split()) == 3 and line.split()[1] in "tTwW"]
    mangled = [name for name in defined if name.startswith("_Z")]
    demangled = run("c++filt", input="\n".join(mangled), capture_output=True, text=True).stdout.splitlines()
    table = {name: name for name in defined}
    for symbol, readable in zip(mangled, demangled):
        table.setdefault(readable, symbol)
    return table


def settle(pid, seconds=120):
    """Waits until `pid` has used no CPU for a second: start-up is over and the daemon idles."""
    def ticks():
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        before = ticks()
        time.sleep(1)
        if ticks() == before:
            return
    sys.exit(f"hot-functions: {pid} did not settle in {seconds} s")


def start_up_done(daemon, user=()):
    """Dumps the profile so far (start-up) to OUT.1 once the daemon idles; the rest goes to OUT at its exit.
    `user`: the command that runs callgrind_control as the daemon's user (vgdb's pipes are named after it)."""
    settle(daemon.pid)
    run(*user, "callgrind_control", "--dump=start-up", str(daemon.pid), stdout=subprocess.DEVNULL, timeout=120)


def profile(binary, work, namespace, scenario):
    """The functions of `binary` that ran after start-up, and those that ran only in it."""
    name = os.path.basename(binary)
    copy = os.path.join(work, name)
    run("objcopy", "--strip-debug", binary, copy)
    profiles = os.path.join(work, "profiles")
    os.makedirs(profiles, exist_ok=True)
    os.chmod(profiles, 0o1777)  # reachd-transfers runs as nobody
    out = os.path.join(profiles, name + ".callgrind")
    daemon = scenario(copy, out)
    daemon.send_signal(2)
    daemon.wait(timeout=120)
    table = symbols(copy)
    return [[table[f] for f in executed(path, name) if f in table] for path in (out, out + ".1")]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    binaries = sys.argv[1]
    output = sys.argv[2] if len(sys.argv) == 3 else "packaging/hot-functions.sections"
    if os.getuid() != 0:
        sys.exit("hot-functions: needs root for a network namespace")
    namespace = f"reachd-hot-{os.getpid()}"
    work = tempfile.mkdtemp()
    os.chmod(work, 0o755)
    netns = ["ip", "netns", "exec", namespace]
    grind = ["valgrind", "--tool=callgrind", "--quiet"]
    try:
        run("ip", "netns", "add", namespace)
        for command in (["link", "set", "lo", "up"], ["link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"],
                        ["link", "set", "eth0", "up"], ["link", "set", "eth0p", "up"],
                        ["addr", "add", "192.0.2.2/24", "dev", "eth0"], ["route", "add", "default", "via", "192.0.2.1"]):
            run("ip", "-n", namespace, *command)
        reachctl = os.path.join(binaries, "reachctl")

        def flap():
            run("ip", "-n", namespace, "link", "set", "eth0p", "down")
            run("ip", "-n", namespace, "link", "set", "eth0p", "up")
            run("ip", "-n", namespace, "route", "replace", "default", "via", "192.0.2.3")

        def reachd(copy, out):
            sock = os.path.join(work, "reachd.sock")
            daemon = subprocess.Popen(netns + grind + [f"--callgrind-out-file={out}", copy, "--socket", sock, "--bus", "none",
                                                       "--networkmanager", "none", "--state-directory", work])
            wait_for(sock)
            start_up_done(daemon)
            run(reachctl, "status", "--socket", sock, stdout=subprocess.DEVNULL)
            flap()
            run(reachctl, "status", "--socket", sock, stdout=subprocess.DEVNULL)
            return daemon

        def transfers(copy, out):
            user = os.path.join(work, "user")
            os.mkdir(user)
            os.chown(user, 65534, 65534)
            sock = os.path.join(user, "transfers.sock")
            drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            daemon = subprocess.Popen(netns + drop + grind + [f"--callgrind-out-file={out}", copy, "--socket", sock,
                                                              "--state-dir", user + "/state", "--cache-dir", user + "/cache",
                                                              "--verdicts", "netlink", "--bus", "none", "--networkmanager", "none",
                                                              "--power", "none"])
            wait_for(sock)
            start_up_done(daemon, drop)
            run(*drop, reachctl, "download", "list", "--transfers-socket", sock, stdout=subprocess.DEVNULL)
            flap()
            run(*drop, reachctl, "download", "list", "--transfers-socket", sock, stdout=subprocess.DEVNULL)
            return daemon

        after_start_up, in_start_up = {}, {}
        for name, scenario in (("reachd", reachd), ("reachd-transfers", transfers)):
            after, start_up = profile(os.path.join(binaries, name), work, namespace, scenario)
            print(f"{name}: {len(after)} functions ran after start-up, {len(start_up)} in it", file=sys.stderr)
            after_start_up.update(dict.fromkeys(after))
            in_start_up.update(dict.fromkeys(start_up))
        order = after_start_up | in_start_up
        with open(output, "w") as file:
            file.write("".join(f".text.{function}\n" for function in order))
        print(f"{output}: {len(order)} symbols", file=sys.stderr)
    finally:
        subprocess.run(["ip", "netns", "del", namespace], stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
