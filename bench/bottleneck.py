#!/usr/bin/env python3
"""bench/transfers' bottleneck run: a router namespace between the client's and the server's, whose tbf queue towards
the client is a home router's (--rate-mbit, and --queue-ms of buffer; in a namespace of its own, so that the server's
TCP sees the queue as on a real path, not its own small queues), the server (nginx) sending with the namespaces'
congestion control (cubic by default). Prints, for
reachd-transfers' background download and for plain curl as the background in the same run: the share of its speed
alone a user's own download (curl) keeps beside it, the round trip it adds to an interactive one (ping through the
same queue), and its own use of the bottleneck when alone. Rates are counted over --seconds after a second's warm-up."""
import argparse, signal, subprocess, threading, time
from transfer_lab import Client, Daemon, add, configure, piped_rate, rate_over, sh, watched

parser = argparse.ArgumentParser()
parser.add_argument("--bin", required=True)
parser.add_argument("--work", required=True)
parser.add_argument("--host-ns", required=True)
parser.add_argument("--peer-ns", required=True)
parser.add_argument("--seconds", type=float, default=10)
parser.add_argument("--rate-mbit", type=float, default=20)
parser.add_argument("--queue-ms", type=int, default=400)
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
    f"ip netns exec {router} tc qdisc add dev bnr1 root tbf rate {args.rate_mbit}mbit burst 32kb limit {queue_bytes}",
]:
    sh(*command.split())


def curl_rate(seconds=args.seconds):
    return piped_rate(["ip", "netns", "exec", ns, "curl", "-s", "-o", "-", url], seconds)


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


class CurlBackground:
    def __init__(self):
        self.process = subprocess.Popen(["ip", "netns", "exec", ns, "curl", "-s", "-o", "/dev/null", url])

    def stop(self):
        self.process.kill()
        self.process.wait()


idle = ping_ms(3)
alone = curl_rate()
print(f"bottleneck {args.rate_mbit:g} Mbit/s, tbf queue {args.queue_ms} ms ({queue_bytes} B), server congestion control "
      f"{sh('ip', 'netns', 'exec', peer, 'sysctl', '-n', 'net.ipv4.tcp_congestion_control').strip()}; idle round trip {idle:.2f} ms; "
      f"a user's download alone {alone / 1e6:.2f} MB/s ({alone / bottleneck * 100:.0f} % of the bottleneck)")

daemon = Daemon()
job = add(url, f"{work}/out/bottleneck.bin")
watcher = watched(job)
ours_alone, ours_ping = during(lambda: rate_over(watcher, {job}, args.seconds), args.seconds)
shared = curl_rate()
state = Client().call({"op": "show", "job": job})["job"]
Client().call({"op": "cancel", "job": job})
daemon.kill(signal.SIGTERM)

# Plain curl as the background: the user's download beside it, then the round trip beside it alone; alone, it uses
# what the user's download alone used.
background = CurlBackground()
time.sleep(1)
beside_curl = curl_rate()
_, curl_ping = during(lambda: time.sleep(args.seconds), args.seconds)
background.stop()

print(f"reachd-transfers' background download: a user's download keeps {shared / alone * 100:.0f} % of its speed alone "
      f"(target 85 %); it adds {ours_ping - idle:.1f} ms to the round trip (target 25 ms); alone it uses "
      f"{ours_alone / bottleneck * 100:.0f} % of the bottleneck (target 85 %); job shows {state.get('pace')}")
print(f"plain curl as the background: a user's download keeps {beside_curl / alone * 100:.0f} % of its speed alone; it adds "
      f"{curl_ping - idle:.1f} ms to the round trip; alone it uses {alone / bottleneck * 100:.0f} % of the bottleneck")
# The client's link to the router, and its route, go with the router's namespace.
sh("ip", "netns", "del", router)
