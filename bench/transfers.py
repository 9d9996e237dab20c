#!/usr/bin/env python3
"""Driver of bench/transfers (which sets up the namespaces, nginx and reachd-testserver): prints the figures."""
import argparse, json, os, shutil, signal, socket, statistics, subprocess, threading, time
from transfer_lab import Client, Daemon, add, configure, sh, wait

parser = argparse.ArgumentParser()
parser.add_argument("--bin", required=True)
parser.add_argument("--work", required=True)
parser.add_argument("--host-ns", required=True)
parser.add_argument("--size-mib", type=int, default=1024)
parser.add_argument("--rounds", type=int, default=8)
parser.add_argument("--pauses", type=int, default=5)
parser.add_argument("--refresh-jobs", type=int, default=1000)
parser.add_argument("--upload-rounds", type=int, default=8)
parser.add_argument("--fetch-runs", type=int, default=20)
parser.add_argument("--metrics", action="store_true", help="serve metrics on a socket and time scrapes with the refresh jobs in place")
args = parser.parse_args()
work, ns = args.work, args.host_ns
size = args.size_mib << 20
sock_path = f"{work}/run/transfers.sock"
configure(args.bin, work, ns, args.metrics)
www_file = f"{work}/www/big.bin"
nginx_url = "http://mirror.test:8080/big.bin"


def with_peak_rss(daemon, body):
    """Runs body() while sampling the daemon's RSS every 50 ms; returns (body's result, peak MB)."""
    peak, done = [daemon.rss_kib()], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], daemon.rss_kib())
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        return body(), peak[0] / 1024
    finally:
        done.set()
        sampler.join()


def nginx_bytes():
    total, records = 0, []
    with open(f"{work}/access.log") as log:
        for line in log:
            if '"GET /big.bin' in line and "reachd-transfers" in line:
                status, sent = line.split('"')[2].split()[:2]
                records.append((int(status), int(sent)))
                total += int(sent)
    return total, records


print(f"file: {args.size_mib} MiB, from nginx (sendfile) in a peer namespace over a veth pair; outputs on {sh('df', '--output=fstype', work).split()[-1]}")
sh("sh", "-c", f"head -c {size} /dev/urandom > {www_file}")
daemon = Daemon()
time.sleep(1)
print(f"reachd-transfers RSS idle: {daemon.rss_kib() / 1024:.1f} MB")

# 1. Throughput, alternating with curl -o; curl + fsync of the file as well, since the daemon fsyncs before the rename.
curl_rates, curl_sync_rates, daemon_rates, written_rates, peaks = [], [], [], [], []
# CPU seconds per GiB. The daemon fsyncs before the rename, and the writeback an fsync starts is done on the caller's
# CPU, so curl's figure is also given with its `sync` of the file. Before each transfer, everything dirty is written
# back (os.sync): the pages of the transfer before are not written back on the next one's time.
curl_cpu, curl_sync_cpu, daemon_cpu = [], [], []
gib = size / (1 << 30)


def children_cpu():
    times = os.times()
    return times.children_user + times.children_system


# Further peers, each as its own process in the same namespace: wget and aria2c (one connection), when installed.
peers = {name: command for name, command in {
    "wget": lambda output: ["wget", "-q", "-O", output, nginx_url],
    "aria2c": lambda output: ["aria2c", "-q", "-x1", "-s1", "--file-allocation=none", "--allow-overwrite=true",
                              "--auto-file-renaming=false", "-d", os.path.dirname(output), "-o", os.path.basename(output), nginx_url],
}.items() if shutil.which(name)}
peer_rates, peer_cpu = {name: [] for name in peers}, {name: [] for name in peers}

for round_number in range(args.rounds):
    output = f"{work}/out/curl.bin"
    os.sync()
    start, cpu_before = time.monotonic(), children_cpu()
    sh("ip", "netns", "exec", ns, "curl", "-sS", "-o", output, nginx_url)
    curl_time = time.monotonic() - start
    curl_cpu.append((children_cpu() - cpu_before) / gib)
    sh("sync", output)
    curl_sync_time = time.monotonic() - start
    curl_sync_cpu.append((children_cpu() - cpu_before) / gib)
    os.unlink(output)
    curl_rates.append(size / curl_time / 1e6)
    curl_sync_rates.append(size / curl_sync_time / 1e6)

    for name, command in peers.items():
        output = f"{work}/out/{name}.bin"
        os.sync()
        start, cpu_before = time.monotonic(), children_cpu()
        sh("ip", "netns", "exec", ns, *command(output))
        peer_rates[name].append(size / (time.monotonic() - start) / 1e6)
        peer_cpu[name].append((children_cpu() - cpu_before) / gib)
        assert os.path.getsize(output) == size, name
        os.unlink(output)

    output = f"{work}/out/daemon.bin"

    def download():
        start = time.monotonic()
        job = add(nginx_url, output)
        partial = f"{work}/out/.daemon.bin.{job}.part"
        while os.path.exists(partial) and os.path.getsize(partial) < size:
            time.sleep(0.001)
        written = time.monotonic() - start
        return wait(job, lambda j: j["state"] in ("completed", "failed", "cancelled")), written, time.monotonic() - start

    os.sync()
    cpu_before = daemon.cpu_seconds()
    (finished, written_time, daemon_time), peak_mb = with_peak_rss(daemon, download)
    daemon_cpu.append((daemon.cpu_seconds() - cpu_before) / gib)
    assert finished["state"] == "completed", finished
    assert os.path.getsize(output) == size
    os.unlink(output)
    daemon_rates.append(size / daemon_time / 1e6)
    written_rates.append(size / written_time / 1e6)
    peaks.append(peak_mb)
    print(f"round {round_number + 1}: curl -o {curl_rates[-1]:.0f} MB/s (with fsync {curl_sync_rates[-1]:.0f} MB/s), "
          f"reachd-transfers {written_rates[-1]:.0f} MB/s to the last byte in the partial file, {daemon_rates[-1]:.0f} MB/s to completed "
          f"(fsync and rename included), RSS peak {peaks[-1]:.1f} MB; CPU s/GiB curl {curl_cpu[-1]:.2f} (with its sync {curl_sync_cpu[-1]:.2f}), "
          f"reachd-transfers {daemon_cpu[-1]:.2f} (its fsync included)")
median = statistics.median
if args.rounds > 0:
    print(f"throughput median: bytes written {median(written_rates):.0f} MB/s = {median(written_rates) / median(curl_rates):.2f} x curl -o; "
          f"completed (fsynced, renamed) {median(daemon_rates):.0f} MB/s = {median(daemon_rates) / median(curl_sync_rates):.2f} x curl -o + fsync "
          f"(target 0.95); daemon RSS peak {max(peaks):.1f} MB (target 40)")
    for name in peers:
        print(f"peer {name}: {median(peer_rates[name]):.0f} MB/s (reachd-transfers {median(written_rates) / median(peer_rates[name]):.2f} x), "
              f"CPU {median(peer_cpu[name]):.2f} s/GiB (reachd-transfers {median(daemon_cpu) / max(median(peer_cpu[name]), 1e-9):.2f} x); "
              f"spread {min(peer_rates[name]):.0f}-{max(peer_rates[name]):.0f} MB/s")
    print(f"CPU seconds per GiB, median: curl {median(curl_cpu):.2f}, reachd-transfers {median(daemon_cpu):.2f} = "
          f"{median(daemon_cpu) / max(median(curl_cpu), 1e-9):.2f} x curl (spread: curl {min(curl_cpu):.2f}-{max(curl_cpu):.2f}, "
          f"reachd-transfers {min(daemon_cpu):.2f}-{max(daemon_cpu):.2f}); curl with its sync {median(curl_sync_cpu):.2f} "
          f"(spread {min(curl_sync_cpu):.2f}-{max(curl_sync_cpu):.2f}): reachd-transfers {median(daemon_cpu) / max(median(curl_sync_cpu), 1e-9):.2f} x")

# 2. kill -9 in the middle of a transfer, restart, count what crossed the link twice. A fresh daemon, so that
# the transfer has a connection of its own (tcp_info counts per connection).
daemon.kill(signal.SIGTERM)
daemon = Daemon()
output = f"{work}/out/killed.bin"
open(f"{work}/access.log", "w").close()
sh("sh", "-c", f"kill -USR1 $(cat {work}/nginx.pid)")
time.sleep(0.2)
job = add(nginx_url, output)
partial = f"{work}/out/.killed.bin.{job}.part"
while not os.path.exists(partial) or os.path.getsize(partial) < size * 2 // 5:
    time.sleep(0.002)
# Freeze the daemon first: the kernel keeps receiving until the socket buffer is full; then read how much
# of the body crossed the link (tcp_info bytes_received) before the kill.
daemon.process.send_signal(signal.SIGSTOP)
time.sleep(0.3)
ss = sh("ip", "netns", "exec", ns, "ss", "-tinH", "dst", "203.0.113.80")
received = max(int(field.split(":")[1]) for field in ss.split() if field.startswith("bytes_received:"))
daemon.kill(signal.SIGKILL)
on_disk = os.path.getsize(partial)
daemon = Daemon()
wait(job, lambda j: j["state"] == "completed")
assert sh("sha256sum", output).split()[0] == sh("sha256sum", www_file).split()[0], "corrupt after kill -9"
time.sleep(0.5)
sent, records = nginx_bytes()
resumed_at = size - records[-1][1]
print(f"kill -9 with {on_disk / 2**20:.1f} MiB on disk: {received / 2**20:.2f} MiB had crossed the link, the restart resumed at "
      f"{resumed_at / 2**20:.2f} MiB: fetched again over the link {(received - resumed_at) / 2**20:.2f} MiB (target 1 MiB; "
      f"nginx had handed {(sent - size) / 2**20:.2f} MiB more to its socket buffers than the file holds); sha256 matches")
os.unlink(output)

# 3. Pause latency: a paced transfer (reachd-testserver, 20 MB/s) over eth0; eth0 goes down, the route is wwan0 (metered).
# Measured with the daemon's own netlink watcher, then with verdicts from reachd (a client of its socket).
def pause_latency(label):
    url = "http://mirror.test:8081/big.bin?rate=20000000"
    output = f"{work}/out/paced.bin"
    job = add(url, output)
    partial = f"{work}/out/.paced.bin.{job}.part"
    events, last_bytes = [], []
    for attempt in range(args.pauses):
        wait(job, lambda j: j["state"] == "running" and j["bytesReceived"] > 0)
        time.sleep(0.5)
        client = Client()
        client.call({"op": "watch", "job": job})
        t0 = time.monotonic()
        sh("ip", "-n", ns, "link", "set", "eth0", "down")
        while client.event(10)["state"] != "deferred":
            pass
        events.append((time.monotonic() - t0) * 1000)
        # When did the partial file last grow?
        last_size, last_change = os.path.getsize(partial), t0
        while time.monotonic() - last_change < 0.3:
            current = os.path.getsize(partial)
            if current != last_size:
                last_size, last_change = current, time.monotonic()
            time.sleep(0.001)
        last_bytes.append(max(0.0, (last_change - t0) * 1000))
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
        sh("ip", "-n", ns, "route", "replace", "default", "via", "192.0.2.1", "dev", "eth0", "metric", "100")
    Client().call({"op": "cancel", "job": job})
    if events:
        print(f"pause latency, {label}, over {args.pauses} switches (eth0 down -> job deferred): median {median(events):.1f} ms, "
              f"max {max(events):.1f} ms; last byte written to the partial file after the switch: median {median(last_bytes):.1f} ms, "
              f"max {max(last_bytes):.1f} ms (target 100 ms)")


pause_latency("own netlink watcher")
daemon.kill(signal.SIGTERM)
reachd_socket = f"{work}/run/reachd.sock"
reachd = subprocess.Popen(["ip", "netns", "exec", ns, f"{args.bin}/reachd", "--socket", reachd_socket, "--bus", "none",
                           "--networkmanager", "none", "--log-level", "warning"], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
while not os.path.exists(reachd_socket):
    time.sleep(0.02)
daemon = Daemon(("--verdicts", "reachd", "--reachd-socket", reachd_socket))
pause_latency("verdicts from reachd")
reachd.send_signal(signal.SIGTERM)
reachd.wait()
daemon.kill(signal.SIGTERM)

# 4. Refresh checks: N jobs whose files are in place, all checked at once against nginx (304 each).
if args.refresh_jobs > 0:
    daemon = Daemon()
    os.makedirs(f"{work}/www/r", exist_ok=True)
    os.makedirs(f"{work}/out/r", exist_ok=True)
    shutil.chown(f"{work}/out/r", "reachd-transfers", "reachd-transfers")
    ids = []
    for n in range(args.refresh_jobs):
        with open(f"{work}/www/r/{n}.txt", "w") as small:
            small.write(f"file {n}\n")
    client = Client()
    for n in range(args.refresh_jobs):
        ids.append(client.call({"op": "add", "url": f"http://mirror.test:8080/r/{n}.txt", "output": f"{work}/out/r/{n}.txt",
                                "refreshEvery": 86400})["job"]["id"])
    watcher = Client()
    jobs = {j["id"]: j for j in watcher.call({"op": "watch"})["jobs"]}
    waiting = {i for i in ids if jobs[i]["state"] != "completed"}
    while waiting:
        j = watcher.event(60)
        jobs[j["id"]] = j
        if j["state"] == "completed":
            waiting.discard(j["id"])
    checked_before = {i: jobs[i]["lastChecked"] for i in ids}
    open(f"{work}/access.log", "w").close()
    sh("sh", "-c", f"kill -USR1 $(cat {work}/nginx.pid)")
    time.sleep(0.2)
    cpu_before = daemon.cpu_seconds()
    start = time.monotonic()
    # Asked from another thread, so that this one keeps reading the watcher's events.
    asker = threading.Thread(target=lambda: [client.call({"op": "refresh", "job": i}) for i in ids])
    asker.start()
    pending = set(ids)
    while pending:
        j = watcher.event(120)
        if j["id"] in pending and j["state"] == "completed" and j["lastChecked"] != checked_before[j["id"]]:
            pending.discard(j["id"])
    elapsed = time.monotonic() - start
    cpu_per_check = (daemon.cpu_seconds() - cpu_before) / args.refresh_jobs
    asker.join()
    time.sleep(0.5)
    with open(f"{work}/access.log") as log:
        statuses = [line.split('"')[2].split()[0] for line in log if '"GET /r/' in line]
    print(f"refresh: {args.refresh_jobs} conditional checks (concurrency 2) in {elapsed:.2f} s = {args.refresh_jobs / elapsed:.0f} checks/s; "
          f"nginx answered {statuses.count('304')} x 304, {len(statuses) - statuses.count('304')} other; "
          f"daemon CPU {cpu_per_check * 1e6:.0f} µs per check")
    if args.metrics:
        scrapes, body = [], b""
        for _ in range(50):
            begin = time.monotonic()
            with socket.socket(socket.AF_UNIX) as metrics:
                metrics.connect(f"{work}/run/metrics.sock")
                metrics.sendall(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
                body = b""
                while chunk := metrics.recv(65536):
                    body += chunk
            scrapes.append(time.monotonic() - begin)
        scrapes.sort()
        completed = [line for line in body.decode().splitlines() if line.startswith('reachd_transfers_jobs{state="completed"}')]
        print(f"metrics: GET /metrics with {args.refresh_jobs} jobs (50 scrapes, {len(body)} bytes): median {statistics.median(scrapes) * 1000:.2f} ms, "
              f"max {scrapes[-1] * 1000:.2f} ms; {completed[0] if completed else 'no jobs line'}")
    daemon.kill(signal.SIGTERM)

# 5. Uploads of the file, multipart POST against curl -F and PUT against curl -T, alternating in the same run:
# throughput, CPU seconds per GiB (curl's; the daemon's), the daemon's RSS.
if args.upload_rounds > 0:
    daemon = Daemon()
    for method, curl_flags, label in (("POST", ["-F", f"file=@{www_file}"], "curl -F"), ("PUT", ["-T", www_file], "curl -T")):
        curl_rates, daemon_rates, peaks, curl_cpu, daemon_cpu = [], [], [], [], []
        for _ in range(args.upload_rounds):
            start, cpu_before = time.monotonic(), children_cpu()
            sh("ip", "netns", "exec", ns, "curl", "-sS", "-o", "/dev/null", *curl_flags, "http://mirror.test:8082/sink")
            curl_rates.append(size / (time.monotonic() - start) / 1e6)
            curl_cpu.append((children_cpu() - cpu_before) / gib)

            def send():
                start = time.monotonic()
                job = Client().call({"op": "upload", "file": www_file, "url": "http://mirror.test:8082/sink", "method": method})["job"]["id"]
                return wait(job, lambda j: j["state"] in ("completed", "failed", "cancelled")), time.monotonic() - start

            cpu_before = daemon.cpu_seconds()
            (finished, elapsed), peak_mb = with_peak_rss(daemon, send)
            daemon_cpu.append((daemon.cpu_seconds() - cpu_before) / gib)
            assert finished["state"] == "completed" and finished["responseStatus"] == 204, finished
            with open(f"{work}/uploads.log") as log:
                last = json.loads(log.read().splitlines()[-1])
            assert last["completed"] and last["received"] >= size, last
            daemon_rates.append(size / elapsed / 1e6)
            peaks.append(peak_mb)
            print(f"upload round: {label} {curl_rates[-1]:.0f} MB/s, reachd-transfers {method} {daemon_rates[-1]:.0f} MB/s "
                  f"(the server read every byte), RSS peak {peaks[-1]:.1f} MB; CPU s/GiB curl {curl_cpu[-1]:.2f}, reachd-transfers {daemon_cpu[-1]:.2f}")
        print(f"upload {method} median: reachd-transfers {median(daemon_rates):.0f} MB/s = {median(daemon_rates) / median(curl_rates):.2f} x {label} "
              f"(spread {min(daemon_rates):.0f}-{max(daemon_rates):.0f} vs {min(curl_rates):.0f}-{max(curl_rates):.0f}); CPU s/GiB "
              f"{median(daemon_cpu):.2f} = {median(daemon_cpu) / max(median(curl_cpu), 1e-9):.2f} x curl's {median(curl_cpu):.2f}; "
              f"RSS peak {max(peaks):.1f} MB")
    daemon.kill(signal.SIGTERM)

# 6. reachctl fetch of a 1 MiB body served from the cache (fresh: no request), wall time of the whole command.
if args.fetch_runs > 0:
    daemon = Daemon()
    os.makedirs(f"{work}/www/fresh", exist_ok=True)
    sh("sh", "-c", f"head -c 1048576 /dev/urandom > {work}/www/fresh/one.bin")
    url = "http://mirror.test:8080/fresh/one.bin"
    command = [f"{args.bin}/reachctl", "fetch", url, "--output", "/dev/null", "--transfers-socket", sock_path]
    subprocess.run(command, check=True, capture_output=True)
    times = []
    for _ in range(args.fetch_runs):
        start = time.monotonic()
        run = subprocess.run(command, check=True, capture_output=True, text=True)
        times.append((time.monotonic() - start) * 1000)
        assert "from the cache" in run.stderr, run.stderr
    print(f"reachctl fetch from the cache (1 MiB, {args.fetch_runs} runs): median {statistics.median(times):.1f} ms, "
          f"max {max(times):.1f} ms (target 30 ms)")
    daemon.kill(signal.SIGTERM)

