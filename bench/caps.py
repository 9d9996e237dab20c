#!/usr/bin/env python3
"""bench/transfers' cap figures: how close reachd-transfers holds a rate cap over a window of --seconds, beside
curl --limit-rate in the same run (counted the same way, through a pipe): a job's own cap (--max-rate), the same job after `limit` doubles it while it runs,
an upload's cap, and the instance's cap shared by two downloads. The rate is measured between the daemon's progress
events (one per MiB moved, timed as they arrive), after a second's warm-up."""
import argparse, signal, subprocess, time
from transfer_lab import Client, Daemon, add, configure, sh

parser = argparse.ArgumentParser()
parser.add_argument("--bin", required=True)
parser.add_argument("--work", required=True)
parser.add_argument("--host-ns", required=True)
parser.add_argument("--seconds", type=float, default=10)
args = parser.parse_args()
configure(args.bin, args.work, args.host_ns)
work, ns = args.work, args.host_ns
MiB = 1 << 20
caps = [1 * MiB, 8 * MiB]
size = int(max(caps) * 2 * (args.seconds + 4) * 1.5)
sh("sh", "-c", f"head -c {size} /dev/urandom > {work}/www/caps.bin")
url = "http://mirror.test:8080/caps.bin"


def rate_over(watcher, ids, seconds):
    """Bytes per second the jobs `ids` moved together between two of their progress events `seconds` apart."""
    moved = {}

    def total():
        return sum(moved.values())

    def next_event():
        job = watcher.event(60)
        if job["id"] in ids:
            moved[job["id"]] = job["bytesReceived"]
            return True
        return False

    warm = time.monotonic() + 1
    while time.monotonic() < warm or len(moved) < len(ids):
        next_event()
    start, first = time.monotonic(), total()
    while time.monotonic() - start < seconds:
        next_event()
    return (total() - first) / (time.monotonic() - start)


def watched(job_id=None):
    watcher = Client()
    watcher.call({"op": "watch", **({"job": job_id} if job_id else {})})
    return watcher


def curl(cap, upload=False):
    """curl --limit-rate's rate over the same window after the same warm-up: the bytes it writes to (a download) or
    reads from (an upload) a pipe of ours, counted as they pass."""
    transfer = ["-T", "-", "http://mirror.test:8082/sink"] if upload else [url]
    process = subprocess.Popen(["ip", "netns", "exec", ns, "curl", "-s", "--limit-rate", str(cap), "-o", "-", *transfer],
                               stdin=subprocess.PIPE if upload else subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL if upload else subprocess.PIPE)
    piece = b"\0" * 16384
    moved, marks = 0, []
    begin = time.monotonic()
    try:
        while True:
            now = time.monotonic() - begin
            if now >= 1 and not marks:
                marks.append((now, moved))
            if now >= 1 + args.seconds:
                marks.append((now, moved))
                break
            if upload:
                process.stdin.write(piece)
                moved += len(piece)
            else:
                moved += len(process.stdout.read1(65536))
    finally:
        process.kill()
        process.wait()
    (t0, b0), (t1, b1) = marks
    return (b1 - b0) / (t1 - t0)


def line(label, cap, ours, theirs):
    print(f"cap {cap / MiB:.0f} MiB/s, {label}: reachd-transfers {ours / MiB:.3f} MiB/s ({(ours / cap - 1) * 100:+.1f} %) over "
          f"{args.seconds:.0f} s; curl --limit-rate {theirs / MiB:.3f} MiB/s ({(theirs / cap - 1) * 100:+.1f} %)")


daemon = Daemon()
for cap in caps:
    job = add(url, f"{work}/out/caps.bin", maxRate=cap)
    watcher = watched(job)
    ours = rate_over(watcher, {job}, args.seconds)
    line("a job's own (--max-rate)", cap, ours, curl(cap))
    Client().call({"op": "limit", "job": job, "maxRate": cap * 2})
    line("the same job after limit doubled it while it ran", cap * 2, rate_over(watcher, {job}, args.seconds), curl(cap * 2))
    Client().call({"op": "cancel", "job": job})
    upload = Client().call({"op": "upload", "file": f"{work}/www/caps.bin", "url": "http://mirror.test:8082/sink",
                            "maxRate": cap})["job"]["id"]
    line("an upload (PUT)", cap, rate_over(watched(upload), {upload}, args.seconds), curl(cap, upload=True))
    Client().call({"op": "cancel", "job": upload})
daemon.kill(signal.SIGTERM)

for cap in caps:
    daemon = Daemon(config=f"max_rate = {cap}\n")
    watcher = watched()
    jobs = {add(url, f"{work}/out/caps-{n}.bin") for n in range(2)}
    line("the instance's (max_rate), two downloads together", cap, rate_over(watcher, jobs, args.seconds), curl(cap))
    for job in jobs:
        Client().call({"op": "cancel", "job": job})
    daemon.kill(signal.SIGTERM)
