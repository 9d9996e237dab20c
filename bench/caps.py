#!/usr/bin/env python3
"""bench/transfers' cap figures: how close reachd-transfers holds a rate cap over a window of --seconds, beside
curl --limit-rate in the same run (counted the same way, through a pipe): a job's own cap (--max-rate), the same job after `limit` doubles it while it runs,
an upload's cap, and the instance's cap shared by two downloads. The rate is measured between the daemon's progress
events (one per MiB moved, timed as they arrive), after a second's warm-up."""
import argparse, signal, subprocess, time
from transfer_lab import Client, Daemon, add, configure, piped_rate, rate_over, sh, watched

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
size = int(max(caps) * 3 * (args.seconds + 4) * 1.5)  # the job goes on while curl is measured
sh("sh", "-c", f"head -c {size} /dev/urandom > {work}/www/caps.bin")
url = "http://mirror.test:8080/caps.bin"


def curl(cap, upload=False):
    # A length of its own: the upload server reads bodies of a known length, not chunked ones.
    transfer = ["-H", f"Content-Length: {1 << 40}", "-T", "-", "http://mirror.test:8082/sink"] if upload else [url]
    return piped_rate(["ip", "netns", "exec", ns, "curl", "-s", "--limit-rate", str(cap), "-o", "-", *transfer], args.seconds, upload)


def cancel(job):
    """Cancels a job unless it has ended already."""
    try:
        Client().call({"op": "cancel", "job": job})
    except RuntimeError as error:
        if "conflict" not in str(error):
            raise


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
    cancel(job)
    upload = Client().call({"op": "upload", "file": f"{work}/www/caps.bin", "url": "http://mirror.test:8082/sink",
                            "maxRate": cap})["job"]["id"]
    line("an upload (PUT)", cap, rate_over(watched(upload), {upload}, args.seconds), curl(cap, upload=True))
    cancel(upload)
daemon.kill(signal.SIGTERM)

for cap in caps:
    daemon = Daemon(config=f"max_rate = {cap}\n")
    watcher = watched()
    jobs = {add(url, f"{work}/out/caps-{n}.bin") for n in range(2)}
    line("the instance's (max_rate), two downloads together", cap, rate_over(watcher, jobs, args.seconds), curl(cap))
    for job in jobs:
        cancel(job)
    daemon.kill(signal.SIGTERM)
