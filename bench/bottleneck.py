#!/usr/bin/env python3
"""bench/transfers' bottleneck run, downloads (straight, then through tinyproxy beside the server) then uploads: a router namespace between the client's and the server's,
whose tbf queue (towards the client, then towards the server) is a home router's (--rate-mbit, and --queue-ms of buffer; in a namespace of its own, so that the server's
TCP sees the queue as on a real path, not its own small queues), the server (nginx) sending with the namespaces'
congestion control (cubic by default). Prints, for
reachd-transfers' background transfer and for plain curl as the background in the same run: the share of its speed
alone a user's own transfer (curl) keeps beside it, the round trip it adds to an interactive one (ping through the
same queue), and its own use of the bottleneck when alone. Rates are counted over --seconds after a second's warm-up."""
import argparse, os, shutil, signal, subprocess, threading, time
from transfer_lab import Client, Daemon, add, configure, piped_rate, rate_over, sh, watched

parser = argparse.ArgumentParser()
parser.add_argument("--bin", required=True)
parser.add_argument("--work", required=True)
parser.add_argument("--host-ns", required=True)
parser.add_argument("--peer-ns", required=True)
parser.add_argument("--seconds", type=float, default=10)
parser.add_argument("--rate-mbit", type=float, default=20)
parser.add_argument("--queue-ms", type=int, default=400)
parser.add_argument("--runs", default="download,proxy,upload", help="which runs, comma-separated: download, proxy, upload")
args = parser.parse_args()
configure(args.bin, args.work, args.host_ns)
work, ns, peer = args.work, args.host_ns, args.peer_ns
bottleneck = args.rate_mbit * 1e6 / 8
size = int(bottleneck * (args.seconds + 4) * 4)
sh("sh", "-c", f"head -c {size} /dev/urandom > {work}/www/bottleneck.bin")
url = "http://mirror.test:8080/bottleneck.bin"
queue_bytes = int(bottleneck * args.queue_ms / 1000)
router = f"{ns}-router"
for command in [
    f"ip netns add {router}", f"ip -n {router} link set lo up", f"ip netns exec {router} sysctl -qw net.ipv4.ip_forward=1",
    f"ip link add bnh netns {ns} type veth peer name bnr1 netns {router}",
    f"ip link add bnr2 netns {router} type veth peer name bnp netns {peer}",
    f"ip -n {ns} addr add 10.77.1.2/24 dev bnh", f"ip -n {router} addr add 10.77.1.1/24 dev bnr1",
    f"ip -n {router} addr add 10.77.2.1/24 dev bnr2", f"ip -n {peer} addr add 10.77.2.2/24 dev bnp",
    f"ip -n {ns} link set bnh up", f"ip -n {router} link set bnr1 up", f"ip -n {router} link set bnr2 up", f"ip -n {peer} link set bnp up",
    # The server through the router; the way back to the client through it too.
    f"ip -n {ns} route add 203.0.113.80/32 via 10.77.1.1", f"ip -n {router} route add 203.0.113.80/32 via 10.77.2.2",
    f"ip -n {peer} route add 10.77.1.0/24 via 10.77.2.1",
]:
    sh(*command.split())


def ping_ms(seconds):
    """The average round trip (ms) of pings every 50 ms through the queue, over `seconds`."""
    out = subprocess.run(["ip", "netns", "exec", ns, "ping", "-n", "-q", "-i", "0.05", "-w", str(int(seconds)), "203.0.113.80"],
                         capture_output=True, text=True).stdout
    summary = out.strip().splitlines()[-1]
    if not summary.startswith("rtt"):
        raise RuntimeError(f"no ping came back through the queue: {out}")
    return float(summary.split("=")[1].split("/")[1])


def during(body, seconds):
    """(body's result, average ping ms) with pings running beside body."""
    result = {}
    pinger = threading.Thread(target=lambda: result.update(ping=ping_ms(seconds)))
    pinger.start()
    value = body()
    pinger.join()
    return value, result["ping"]


def queue_on(link):
    """The tbf queue on the router's `link`: bnr1 towards the client (downloads), bnr2 towards the server (uploads)."""
    for other in ("bnr1", "bnr2"):
        subprocess.run(["ip", "netns", "exec", router, "tc", "qdisc", "del", "dev", other, "root"], capture_output=True)
    sh("ip", "netns", "exec", router, "tc", "qdisc", "add", "dev", link, "root", "tbf", "rate", f"{args.rate_mbit}mbit",
       "burst", "32kb", "limit", str(queue_bytes))


def drained(link):
    """Waits until the router's queue on `link` is empty: a user's transfer that just ended leaves up to --queue-ms of
    its bytes there, which are not the next background's doing."""
    for _ in range(500):
        shown = sh("ip", "netns", "exec", router, "tc", "-s", "qdisc", "show", "dev", link)
        if " backlog 0b " in shown:
            return
        time.sleep(0.01)
    raise RuntimeError(f"the queue on {link} does not drain: {shown}")


def run(direction, proxy=None):
    """One direction's figures: the user's transfer alone, then reachd-transfers' background job alone (its use, the
    round trip it adds) and beside the user's, then plain curl as the background; both backgrounds through `proxy` when
    given (the user's own transfer straight)."""
    upload = direction == "upload"
    link = "bnr2" if upload else "bnr1"
    queue_on(link)
    # An upload has a length of its own: the upload server reads bodies of a known length, not chunked ones.
    curl = ["ip", "netns", "exec", ns, "curl", "-s", "-o", "-"] + (
        ["-H", f"Content-Length: {1 << 40}", "-T", "-", "http://mirror.test:8082/sink"] if upload else [url])
    idle = ping_ms(3)
    alone = piped_rate(curl, args.seconds, upload)
    print(f"{direction}s: bottleneck {args.rate_mbit:g} Mbit/s, tbf queue {args.queue_ms} ms ({queue_bytes} B); idle round trip "
          f"{idle:.2f} ms; a user's {direction} alone {alone / 1e6:.2f} MB/s ({alone / bottleneck * 100:.0f} % of the bottleneck)")
    daemon = Daemon()
    request = {"op": "upload", "file": f"{work}/www/bottleneck.bin", "url": "http://mirror.test:8082/sink"} if upload else \
        {"op": "add", "url": url, "output": f"{work}/out/bottleneck.bin"}
    background_kind = direction + (" through a proxy" if proxy else "")
    if proxy:
        request["proxy"] = proxy
    drained(link)
    job = Client().call(request)["job"]["id"]
    watcher = watched(job)
    ours_alone, ours_ping = during(lambda: rate_over(watcher, {job}, args.seconds), args.seconds)
    shared = piped_rate(curl, args.seconds, upload)
    state = Client().call({"op": "show", "job": job})["job"]
    Client().call({"op": "cancel", "job": job})
    daemon.kill(signal.SIGTERM)
    # Plain curl as the background: the user's transfer beside it, then the round trip beside it alone; alone, it uses
    # what the user's transfer alone used.
    background = subprocess.Popen(curl + (["-x", proxy] if proxy else []), stdin=subprocess.PIPE if upload else subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    feeding = threading.Thread(target=feed, args=(background,), daemon=True) if upload else None
    if feeding:
        feeding.start()
    time.sleep(1)
    beside_curl = piped_rate(curl, args.seconds, upload)
    _, curl_ping = during(lambda: time.sleep(args.seconds), args.seconds)
    background.kill()
    background.wait()
    print(f"reachd-transfers' background {background_kind}: a user's {direction} keeps {shared / alone * 100:.0f} % of its speed alone "
          f"(target 85 %); it adds {ours_ping - idle:.1f} ms to the round trip (target 25 ms); alone it uses "
          f"{ours_alone / bottleneck * 100:.0f} % of the bottleneck (target 85 %); the job showed {state.get('pace')}")
    print(f"plain curl as the background {background_kind}: a user's {direction} keeps {beside_curl / alone * 100:.0f} % of its speed "
          f"alone; it adds {curl_ping - idle:.1f} ms to the round trip; alone it uses {alone / bottleneck * 100:.0f} % of the bottleneck")


def feed(process):
    """Writes zeros to a background curl's upload until it is killed."""
    piece = b"\0" * 65536
    try:
        while True:
            process.stdin.write(piece)
    except (BrokenPipeError, ValueError, OSError):
        pass


print(f"server congestion control {sh('ip', 'netns', 'exec', peer, 'sysctl', '-n', 'net.ipv4.tcp_congestion_control').strip()}, "
      f"client's {sh('ip', 'netns', 'exec', ns, 'sysctl', '-n', 'net.ipv4.tcp_congestion_control').strip()}")


def run_through_proxy():
    """The download run with both backgrounds through tinyproxy beside the server."""
    # The proxy beside the server resolves the origin's name in the server's namespace.
    os.makedirs(f"/etc/netns/{peer}", exist_ok=True)
    with open(f"/etc/netns/{peer}/hosts", "w") as hosts:
        hosts.write("127.0.0.1 localhost\n203.0.113.80 mirror.test\n")
    with open(f"{work}/tinyproxy.conf", "w") as conf:
        conf.write("User nobody\nGroup nogroup\nPort 3128\nListen 203.0.113.80\nTimeout 60\nMaxClients 16\n")
    tinyproxy = subprocess.Popen(["ip", "netns", "exec", peer, "tinyproxy", "-d", "-c", f"{work}/tinyproxy.conf"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(250):
        if subprocess.run(["ip", "netns", "exec", ns, "curl", "-s", "-o", "/dev/null", "-x", "http://mirror.test:3128", "-r", "0-0", url]).returncode == 0:
            break
        time.sleep(0.02)
    else:
        raise RuntimeError("tinyproxy beside the server does not answer")
    run("download", proxy="http://mirror.test:3128")
    tinyproxy.kill()
    tinyproxy.wait()
    shutil.rmtree(f"/etc/netns/{peer}")


runs = set(args.runs.split(","))
if runs - {"download", "proxy", "upload"}:
    parser.error(f"unknown runs: {', '.join(sorted(runs - {'download', 'proxy', 'upload'}))}")
if "download" in runs:
    run("download")
if "proxy" in runs:
    run_through_proxy()
if "upload" in runs:
    run("upload")
# The client's link to the router, and its route, go with the router's namespace.
sh("ip", "netns", "del", router)
