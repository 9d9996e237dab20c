"""What the transfer benchmarks share: reachd-transfers' socket client, the daemon as the system instance, add and
wait. `configure` first: the binaries, the work directory and the host namespace bench/transfers made."""
import json, os, socket, subprocess, time

bin_dir = work = ns = sock_path = None
metrics = False


def configure(binaries, work_directory, host_ns, serve_metrics=False):
    global bin_dir, work, ns, sock_path, metrics
    bin_dir, work, ns, metrics = binaries, work_directory, host_ns, serve_metrics
    sock_path = f"{work}/run/transfers.sock"


def sh(*command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


class Client:
    def __init__(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sock_path)
        self.buffer = b""
        self.held = []

    def line(self, timeout=None):
        self.sock.settimeout(timeout)
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("reachd-transfers closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def call(self, request):
        self.sock.sendall((json.dumps(request) + "\n").encode())
        while True:
            reply = self.line(60)
            if reply["type"] == "event":
                self.held.append(reply["job"])
                continue
            if reply["type"] == "error":
                raise RuntimeError(reply["error"])
            return reply

    def event(self, timeout=None):
        if self.held:
            return self.held.pop(0)
        while True:
            reply = self.line(timeout)
            if reply["type"] == "event":
                return reply["job"]


class Daemon:
    """reachd-transfers, the system instance as its system user; per-host verdicts from its own netlink watcher
    unless `verdicts` says otherwise (never the machine's reachd, which sees another namespace)."""

    def __init__(self, verdicts=("--verdicts", "netlink"), config=""):
        extra = config
        with open(f"{work}/transfers.toml", "w") as config:
            # The refresh figure holds 1,000 jobs besides the earlier ones: past the default limit of 1,000 per user.
            config.write("[downloads]\nmetered_threshold = 10485760\nmax_jobs_per_user = 100000\nmax_jobs = 100000\n")
            config.write(extra)
            if metrics:
                config.write(f"[metrics]\ntransfers_listen = \"{work}/run/metrics.sock\"\n")
        self.log = open(f"{work}/transfers.log", "a")
        self.process = subprocess.Popen(
            ["ip", "netns", "exec", ns, "setpriv", "--reuid=reachd-transfers", "--regid=reachd-transfers", "--init-groups",
             f"{bin_dir}/reachd-transfers", "--system", "--socket", sock_path, "--state-dir", f"{work}/state", "--cache-dir", f"{work}/cache",
             "--config", f"{work}/transfers.toml", "--log-level", os.environ.get("BENCH_LOG_LEVEL", "warning"), "--bus", "none", "--networkmanager", "none", *verdicts],
            stderr=self.log, stdout=subprocess.DEVNULL)
        for _ in range(500):
            try:
                Client().call({"op": "ping"})
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("reachd-transfers did not start")

    def rss_kib(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

    def cpu_seconds(self):
        """User plus system CPU seconds the daemon has used so far (all threads)."""
        with open(f"/proc/{self.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self, sig):
        self.process.send_signal(sig)
        self.process.wait()


def add(url, output, **extra):
    return Client().call({"op": "add", "url": url, "output": output, **extra})["job"]["id"]


def wait(job_id, condition, timeout=600):
    client = Client()
    job = client.call({"op": "watch", "job": job_id})["jobs"][0]
    deadline = time.monotonic() + timeout
    while not condition(job):
        job = client.event(max(0.01, deadline - time.monotonic()))
    return job


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


def piped_rate(command, seconds, upload=False):
    """A command's rate over `seconds` after a second's warm-up: the bytes it writes to (a download) or reads from (an
    upload) a pipe of ours, counted as they pass."""
    process = subprocess.Popen(command, stdin=subprocess.PIPE if upload else subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL if upload else subprocess.PIPE)
    piece = b"\0" * 16384
    moved, marks = 0, []
    begin = time.monotonic()
    try:
        while True:
            now = time.monotonic() - begin
            if now >= 1 and not marks:
                marks.append((now, moved))
            if now >= 1 + seconds:
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
