import ArgumentParser
import ReachdClient
import ReachdModel
import ReachdProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Measures reachd inside a prepared namespace (see bench/run): event latency over link flaps and default
/// route changes beside the kernel's netlink message, idle CPU and wake-ups, resident memory with many
/// subscribers, and fan-out time to many subscribers beside its floor (bench/fanout-floor.c). With `--before`,
/// a second reachd's latency and fan-out are measured in alternating blocks with this one's.
@main
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reachd-bench", abstract: "reachd benchmark driver; run through bench/run.")

    @Option(help: "The reachd binary to start.") var reachd: String
    @Option(help: "Another reachd binary, measured beside --reachd (latency and fan-out) in alternating blocks.") var before: String?
    @Option(help: "Alternating blocks of --before and --reachd.") var blocks: Int = 3
    @Option(help: "bench/fanout-floor.c, built: the fan-out's reader and its floor.") var fanoutProgram: String
    @Option(help: "The veth end whose admin state flips the carrier of the watched link.") var flap: String = "eth0p"
    @Option(help: "The watched link (the other end of --flap), whose netlink message starts the latency clock.") var watched: String = "eth0"
    @Option(help: "Link flaps for the latency figure (each is two changes).") var flaps: Int = 500
    @Option(help: "Default route changes (deleted, added) for the latency figure.") var routeChanges: Int = 100
    @Option(help: "Seconds the daemon is left idle for the CPU/wake-up figure.") var idleSeconds: Int = 60
    @Option(help: "Subscribers for the memory figure.") var subscribers: Int = 1000
    @Option(help: "Subscribers for the fan-out figure.") var fanout: Int = 10000
    @Option(help: "Changes timed for the fan-out figure.") var fanoutRounds: Int = 5
    @Option(help: "Watched hosts for the host re-judging figure (names h1.bench ... from /etc/hosts).") var hosts: Int = 1000
    @Option(help: "reachctl binary for the `status --host` wall-time figure.") var reachctl: String?
    @Option(help: "Serve metrics on this IPv4 address:port ([metrics] listen) and time scrapes with the hosts watched.") var metrics: String?

    var socketPath: String { "/tmp/reachd-bench-\(getpid()).sock" }

    func run() throws {
        raiseFileLimit()
        // Every subscriber is root's: raise reachd's per-user and total connection limits (docs/limits.md) above them.
        let connections = max(subscribers, fanout) + 64
        var text = "[connections]\nper_user = \(connections)\ntotal = \(connections)\n"
        // Always served: the fan-out's path is read from it (the namespace is bench/run's own, so the port is free).
        text += "[metrics]\nlisten = \"\(servedMetrics)\"\n"
        let config = "/tmp/reachd-bench-\(getpid()).toml"
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        defer { unlink(config) }
        let link = try LinkFlapper(name: flap)
        defer { try? link.set(up: true) }
        let stamp = try NetlinkStamp()
        let index = Int32(bitPattern: if_nametoindex(watched))
        guard index > 0 else { throw BenchError("no link \(watched)") }
        let probe = Probe(link: link, stamp: stamp, watchedIndex: index)

        let daemon = try Daemon(binary: reachd, socket: socketPath, config: config)
        defer { daemon.stop() }

        // 1. Latency: link change and default route change -> event line at a subscriber.
        let watcher = try ReachdConnection(path: socketPath)
        var latency = Latency()
        try probe.measure(watcher, flaps: flaps, routeChanges: routeChanges, into: &latency)
        latency.print(label: "")

        // 2. Idle: CPU ticks and context switches (wake-ups) of all daemon threads, after 2 s to settle, while one host
        // is watched (its refresh waits on a timer the whole time).
        do {
            let hostWatch = try ReachdConnection(path: socketPath)
            _ = try hostWatch.verdicts(for: Request(op: .subscribe, hosts: ["192.0.2.1"]), timeout: 10)
            sleep(2)
            let idleStart = daemon.usage()
            sleep(UInt32(idleSeconds))
            let idleEnd = daemon.usage()
            print("idle \(idleSeconds) s, one host watched: CPU ticks \(idleEnd.ticks - idleStart.ticks), wake-ups (context switches, all threads) \(idleEnd.switches - idleStart.switches)")
        }

        // 3. Memory with many subscribers.
        let baseline = daemon.rssKB()
        var clients: [Int32] = []
        for _ in 0..<subscribers { clients.append(try subscribe(socketPath)) }
        usleep(300_000)
        print("RSS: \(baseline / 1024) MB idle, \(daemon.rssKB() / 1024) MB (\(daemon.rssKB()) kB) with \(clients.count) subscribers")

        // 4. Fan-out: one change delivered to every subscriber, beside the floor.
        while clients.count < fanout { clients.append(try subscribe(socketPath)) }
        usleep(300_000)
        var fanOut = FanOut()
        try probe.fanOut(watcher, clients: clients, rounds: fanoutRounds, program: fanoutProgram, into: &fanOut)
        for fd in clients { close(fd) }
        fanOut.print(label: "", subscribers: clients.count, extra: "; RSS \(daemon.rssKB() / 1024) MB")
        print(fanOutPath())

        // 5. Hosts: last, so that its caches do not count in the memory figures above; eth0 carries them.
        if try probe.restoreWired(watcher), hosts > 0 { try benchHosts(socketPath) }
        if let before { try compare(before: before, config: config, probe: probe, running: daemon) }
    }

    /// `--before` and `--reachd` side by side: `blocks` blocks of each, alternating which goes first, each a
    /// fresh daemon with a share of the latency changes and the fan-out rounds (each round beside a floor round).
    private func compare(before: String, config: String, probe: Probe, running: Daemon) throws {
        running.stop()
        let binaries = [("before", before), ("after", reachd)]
        var latencies = [Latency(), Latency()]
        var fanOuts = [FanOut(), FanOut()]
        var paths = ["", ""]
        for block in 0..<blocks {
            for turn in 0..<2 {
                let which = (block + turn) % 2
                let daemon = try Daemon(binary: binaries[which].1, socket: socketPath, config: config)
                defer { daemon.stop() }
                let watcher = try ReachdConnection(path: socketPath)
                progress("block \(block + 1): \(binaries[which].0), latency")
                try probe.measure(watcher, flaps: max(1, flaps / blocks), routeChanges: max(2, routeChanges / blocks),
                                  into: &latencies[which])
                var clients: [Int32] = []
                while clients.count < fanout { clients.append(try subscribe(socketPath)) }
                usleep(300_000)
                progress("block \(block + 1): \(binaries[which].0), fan-out")
                try probe.fanOut(watcher, clients: clients, rounds: fanoutRounds, program: fanoutProgram, into: &fanOuts[which])
                paths[which] = fanOutPath(label: "  \(binaries[which].0): ")
                for fd in clients { close(fd) }
                _ = try probe.restoreWired(watcher)
            }
        }
        print("side by side, \(blocks) alternating blocks each:")
        for which in 0..<2 {
            latencies[which].print(label: "  \(binaries[which].0): ")
            fanOuts[which].print(label: "  \(binaries[which].0): ", subscribers: fanout, extra: "")
            print(paths[which] + " (its last block)")
        }
        let (b, a) = (median(fanOuts[0].reachd), median(fanOuts[1].reachd))
        print("  fan-out after/before: \(ratio(a / b)); latency over netlink, median: before +\(ms(median(latencies[0].overNetlink))) ms, after +\(ms(median(latencies[1].overNetlink))) ms")
    }

    /// Where `--metrics` is not given, reachd serves its metrics here all the same.
    private var servedMetrics: String { metrics ?? "127.0.0.1:9464" }

    /// Which way the daemon wrote its subscribers' lines so far (`reachd_subscriber_lines_total`): straight to the
    /// sockets it accepted, or through NIO's queues.
    private func fanOutPath(label: String = "") -> String {
        guard let answer = try? scraped(servedMetrics) else { return "\(label)fan-out path: no metrics answer" }
        let text = String(decoding: answer, as: UTF8.self)
        func lines(_ path: String) -> String? {
            text.split(separator: "\n").first { $0.hasPrefix("reachd_subscriber_lines_total{path=\"\(path)\"}") }
                .flatMap { $0.split(separator: " ").last }.map(String.init)
        }
        guard let socket = lines("socket"), let queue = lines("queue") else {
            return "\(label)fan-out path: not reported by this reachd (no reachd_subscriber_lines_total)"
        }
        return "\(label)fan-out path: \(socket) lines straight to the sockets reachd accepted, \(queue) through the event loops' queues"
    }

    /// A raw subscribed connection (its `subscribed` line already read).
    private func subscribe(_ path: String) throws -> Int32 {
        let connection = try ReachdConnection(path: path)
        _ = try connection.verdict(for: Request(op: .subscribe), timeout: 10)
        let fd = dup(connection.fileDescriptor)
        return fd
    }
}

/// Latency samples: from the change command, and from the kernel's netlink message about it.
struct Latency {
    var total: [Double] = []
    var overNetlink: [Double] = []
    var routeOverNetlink: [Double] = []
    var wrong = 0

    func print(label: String) {
        let t = total.sorted(), n = overNetlink.sorted(), r = routeOverNetlink.sorted()
        Swift.print("\(label)latency link change -> event (\(t.count) changes): p50 \(ms(percentile(t, 0.50))) ms, p99 \(ms(percentile(t, 0.99))) ms, max \(ms(t.last ?? 0)) ms; unexpected verdicts: \(wrong)")
        Swift.print("\(label)  over the kernel's netlink message (what `ip monitor` reads), link: p50 +\(ms(percentile(n, 0.5))) ms, p90 +\(ms(percentile(n, 0.9))) ms, max +\(ms(n.last ?? 0)) ms; default route (\(r.count) changes): p50 +\(ms(percentile(r, 0.5))) ms, p90 +\(ms(percentile(r, 0.9))) ms, max +\(ms(r.last ?? 0)) ms")
    }
}

/// Fan-out rounds: reachd's and, round by round, the floor's; with the reader's work in each.
struct FanOut {
    var reachd: [Double] = []
    var floor: [Double] = []
    /// The floor with the writer's connections in an epoll set (as reachd's are).
    var watchedFloor: [Double] = []
    var reachdReader: [ReaderWork] = []
    var floorReader: [ReaderWork] = []

    func print(label: String, subscribers: Int, extra: String) {
        let r = reachd.sorted(), f = floor.sorted()
        Swift.print("\(label)fan-out to \(subscribers) subscribers (\(r.count) changes): median \(ms(median(r))) ms, max \(ms(r.last ?? 0)) ms; floor (bench/fanout-floor.c, same rounds): median \(ms(median(f))) ms; ratio \(ratio(median(r) / median(f)))\(extra)")
        let w = median(watchedFloor)
        Swift.print("\(label)  floor with the writer's connections in an epoll set, as a server's are: median \(ms(w)) ms; ratio \(ratio(median(r) / w))")
        Swift.print("\(label)  the reader's work per change, median: reachd's subscribers \(Self.work(reachdReader)); the floor's \(Self.work(floorReader))")
    }

    private static func work(_ rounds: [ReaderWork]) -> String {
        "CPU \(ms(median(rounds.map(\.cpuSeconds)))) ms in \(Int(median(rounds.map { Double($0.waits) }))) epoll waits"
    }
}

/// A line on standard error (unbuffered: it shows where a failed run stopped).
func progress(_ text: String) {
    let line = Array("reachd-bench: \(text)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func median(_ values: [Double]) -> Double { percentile(values.sorted(), 0.5) }

func ratio(_ value: Double) -> String { "\((value * 100).rounded() / 100)×" }
