import ArgumentParser
import CNetlink
import ReachdClient
import ReachdModel
import ReachdProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Measures reachd inside a prepared namespace (see bench/run): event latency over link flaps, idle CPU and
/// wake-ups, resident memory with many subscribers, and fan-out time to many subscribers.
@main
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reachd-bench", abstract: "reachd benchmark driver; run through bench/run.")

    @Option(help: "The reachd binary to start.") var reachd: String
    @Option(help: "The veth end whose admin state flips the carrier of the watched link.") var flap: String = "eth0p"
    @Option(help: "Link flaps for the latency figure (each is two changes).") var flaps: Int = 500
    @Option(help: "Seconds the daemon is left idle for the CPU/wake-up figure.") var idleSeconds: Int = 60
    @Option(help: "Subscribers for the memory figure.") var subscribers: Int = 1000
    @Option(help: "Subscribers for the fan-out figure.") var fanout: Int = 10000
    @Option(help: "Changes timed for the fan-out figure.") var fanoutRounds: Int = 5
    @Option(help: "Watched hosts for the host re-judging figure (names h1.bench ... from /etc/hosts).") var hosts: Int = 1000
    @Option(help: "reachctl binary for the `status --host` wall-time figure.") var reachctl: String?
    @Option(help: "Serve metrics on this IPv4 address:port ([metrics] listen) and time scrapes with the hosts watched.") var metrics: String?

    func run() throws {
        raiseFileLimit()
        let socketPath = "/tmp/reachd-bench-\(getpid()).sock"
        // Every subscriber is root's: raise reachd's per-user and total connection limits (docs/limits.md) above them.
        let connections = max(subscribers, fanout) + 64
        var text = "[connections]\nper_user = \(connections)\ntotal = \(connections)\n"
        if let metrics { text += "[metrics]\nlisten = \"\(metrics)\"\n" }
        let config = "/tmp/reachd-bench-\(getpid()).toml"
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        defer { unlink(config) }
        let daemon = try Daemon(binary: reachd, socket: socketPath, config: config)
        defer { daemon.stop() }
        let link = try LinkFlapper(name: flap)
        defer { try? link.set(up: true) }

        // 1. Latency: link change -> event line at a subscriber.
        let watcher = try ReachdConnection(path: socketPath)
        var expectUp = try watcher.verdict(for: Request(op: .subscribe), timeout: 5).verdict.status == .wired
        var samples: [Double] = []
        var wrong = 0
        for _ in 0..<(flaps * 2) {
            let start = MonotonicClock.seconds()
            try link.set(up: !expectUp)
            expectUp.toggle()
            let verdict = try nextEvent(watcher)
            samples.append(MonotonicClock.seconds() - start)
            if (verdict.verdict.status == .wired) != expectUp { wrong += 1 }
        }
        samples.sort()
        print("latency link change -> event (\(samples.count) changes): p50 \(ms(percentile(samples, 0.50))) ms, p99 \(ms(percentile(samples, 0.99))) ms, max \(ms(samples.last ?? 0)) ms; unexpected verdicts: \(wrong)")

        // 2. Idle: CPU ticks and context switches (wake-ups) of all daemon threads, after 2 s to settle.
        sleep(2)
        let before = daemon.usage()
        sleep(UInt32(idleSeconds))
        let after = daemon.usage()
        print("idle \(idleSeconds) s: CPU ticks \(after.ticks - before.ticks), wake-ups (context switches, all threads) \(after.switches - before.switches)")

        // 3. Memory with many subscribers.
        let baseline = daemon.rssKB()
        var clients: [Int32] = []
        for _ in 0..<subscribers { clients.append(try subscribe(socketPath)) }
        usleep(300_000)
        print("RSS: \(baseline / 1024) MB idle, \(daemon.rssKB() / 1024) MB (\(daemon.rssKB()) kB) with \(clients.count) subscribers")

        // 4. Fan-out: one change delivered to every subscriber.
        while clients.count < fanout { clients.append(try subscribe(socketPath)) }
        usleep(300_000)
        var rounds: [Double] = []
        for _ in 0..<fanoutRounds {
            let start = MonotonicClock.seconds()
            try link.set(up: !expectUp)
            expectUp.toggle()
            try awaitLine(on: clients)
            rounds.append(MonotonicClock.seconds() - start)
            _ = try nextEvent(watcher)
        }
        rounds.sort()
        print("fan-out to \(clients.count) subscribers (\(rounds.count) changes): median \(ms(percentile(rounds, 0.5))) ms, max \(ms(rounds.last ?? 0)) ms; RSS \(daemon.rssKB() / 1024) MB")
        for fd in clients { close(fd) }

        // 5. Hosts: last, so that its caches do not count in the memory figures above; eth0 carries them.
        if !expectUp {
            try link.set(up: true)
            while try nextEvent(watcher).verdict.status != .wired {}
        }
        if hosts > 0 { try benchHosts(socketPath) }
    }

    /// Re-judging many watched hosts after one route change, and `reachctl status --host` wall time.
    private func benchHosts(_ socketPath: String) throws {
        let names = (1...hosts).map { "h\($0).bench" }
        let client = try ReachdConnection(path: socketPath)
        let start = MonotonicClock.seconds()
        let initial = try client.verdicts(for: Request(op: .subscribe, hosts: names), timeout: 120)
        let subscribeTime = MonotonicClock.seconds() - start
        guard initial.count == hosts, initial.allSatisfy({ $0.verdict.status == .wired }) else {
            throw BenchError("expected \(hosts) hosts via eth0, got \(initial.filter { $0.verdict.status == .wired }.count)")
        }
        var rounds: [Double] = []
        for round in 0..<4 {
            let via = round % 2 == 0 ? "203.0.113.1" : "192.0.2.1"
            let change = MonotonicClock.seconds()
            try run("/usr/sbin/ip", ["route", "replace", "198.18.0.0/15", "via", via])
            // Count event lines without decoding them: the figure is the daemon's, not this client's JSON parsing.
            var changed = 0
            let marker = Array("\"type\":\"event\"".utf8)
            while changed < hosts {
                guard let line = try client.nextLine(timeout: 30) else { throw BenchError("host events missing") }
                if line.firstRange(of: marker) != nil { changed += 1 }
            }
            rounds.append(MonotonicClock.seconds() - change)
        }
        rounds.sort()
        if let metrics {
            var scrapes: [Double] = []
            var size = 0
            for _ in 0..<50 {
                let begin = MonotonicClock.seconds()
                size = try scrape(metrics)
                scrapes.append(MonotonicClock.seconds() - begin)
            }
            scrapes.sort()
            print("metrics: GET /metrics with \(hosts) hosts watched (50 scrapes, \(size) bytes): median \(ms(percentile(scrapes, 0.5))) ms, max \(ms(scrapes.last ?? 0)) ms")
        }
        print("hosts: subscribe to \(hosts) names \(ms(subscribeTime)) ms; one route change re-judges all \(hosts) (event at the client): median \(ms(percentile(rounds, 0.5))) ms, max \(ms(rounds.last ?? 0)) ms")
        try run("/usr/sbin/ip", ["route", "del", "198.18.0.0/15"])
        if let reachctl {
            var times: [Double] = []
            for i in 0..<20 {
                let begin = MonotonicClock.seconds()
                try run(reachctl, ["status", "--host", names[i % names.count], "--socket", socketPath], okStatuses: [0, 1])
                times.append(MonotonicClock.seconds() - begin)
            }
            times.sort()
            print("reachctl status --host (/etc/hosts name, 20 runs): median \(ms(percentile(times, 0.5))) ms, max \(ms(times.last ?? 0)) ms")
        }
    }

    private func run(_ binary: String, _ arguments: [String], okStatuses: Set<Int32> = [0]) throws {
        var child: pid_t = 0
        let args = [binary] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        defer { posix_spawn_file_actions_destroy(&actions) }
        guard posix_spawn(&child, binary, &actions, nil, &argv, environ) == 0 else { throw BenchError("cannot run \(binary)") }
        var status: Int32 = 0
        waitpid(child, &status, 0)
        let code = (status >> 8) & 0xff
        guard okStatuses.contains(code) else { throw BenchError("\(args.joined(separator: " ")) exited \(code)") }
    }

    /// One `GET /metrics` from `address` (IPv4:port); returns the bytes of the answer.
    private func scrape(_ address: String) throws -> Int {
        let parts = address.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { throw BenchError("--metrics takes IPv4:PORT") }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket failed") }
        defer { close(fd) }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        inet_pton(AF_INET, String(parts[0]), &sin.sin_addr)
        let connected = withUnsafePointer(to: &sin) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { throw BenchError("cannot connect to \(address)") }
        let request = Array("GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            total += n
        }
        guard total > 0 else { throw BenchError("empty answer from \(address)") }
        return total
    }

    private func nextEvent(_ connection: ReachdConnection) throws -> StampedVerdict {
        while true {
            guard let reply = try connection.nextReply(timeout: 10) else { throw BenchError("no event within 10 s") }
            if case .event(let verdict) = reply { return verdict }
        }
    }

    /// A raw subscribed connection (its `subscribed` line already read).
    private func subscribe(_ path: String) throws -> Int32 {
        let connection = try ReachdConnection(path: path)
        _ = try connection.verdict(for: Request(op: .subscribe), timeout: 10)
        let fd = dup(connection.fileDescriptor)
        return fd
    }

    /// Waits until every descriptor has received one complete line.
    private func awaitLine(on fds: [Int32]) throws {
        var pending = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = MonotonicClock.seconds() + 30
        while !pending.isEmpty {
            guard MonotonicClock.seconds() < deadline else { throw BenchError("\(pending.count) subscribers got no event within 30 s") }
            let ready = poll(&pending, nfds_t(pending.count), 1000)
            guard ready > 0 else { continue }
            var still: [pollfd] = []
            still.reserveCapacity(pending.count)
            for entry in pending {
                if entry.revents == 0 { still.append(pollfd(fd: entry.fd, events: entry.events, revents: 0)); continue }
                let n = buffer.withUnsafeMutableBytes { recv(entry.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n <= 0 || !buffer.prefix(n).contains(10) {
                    if n == 0 { throw BenchError("a subscriber was disconnected") }
                    still.append(pollfd(fd: entry.fd, events: entry.events, revents: 0))
                }
            }
            pending = still
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The daemon under test, started as a child process.
final class Daemon {
    let pid: pid_t
    let socket: String

    init(binary: String, socket: String, config: String? = nil) throws {
        self.socket = socket
        var child: pid_t = 0
        let args = [binary, "--socket", socket, "--log-level", "warning", "--bus", "none", "--networkmanager", "none"]
            + (config.map { ["--config", $0] } ?? [])
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        guard posix_spawn(&child, binary, nil, nil, &argv, environ) == 0 else { throw BenchError("cannot start \(binary)") }
        pid = child
        for _ in 0..<500 {
            if (try? ReachdConnection(path: socket)) != nil { return }
            usleep(10_000)
        }
        throw BenchError("reachd did not open \(socket)")
    }

    func stop() {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// utime+stime ticks and voluntary+involuntary context switches, summed over all threads.
    func usage() -> (ticks: Int, switches: Int) {
        let stat = read("/proc/\(pid)/stat").split(separator: ")").last?.split(separator: " ") ?? []
        let ticks = (Int(stat.count > 12 ? stat[11] : "0") ?? 0) + (Int(stat.count > 12 ? stat[12] : "0") ?? 0)
        var switches = 0
        if let dir = opendir("/proc/\(pid)/task") {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard name.first?.isNumber == true else { continue }
                for line in read("/proc/\(pid)/task/\(name)/status").split(separator: "\n") where line.contains("ctxt_switches") {
                    switches += Int(line.split(whereSeparator: { $0 == "\t" || $0 == " " }).last ?? "") ?? 0
                }
            }
            closedir(dir)
        }
        return (ticks, switches)
    }

    func rssKB() -> Int {
        for line in read("/proc/\(pid)/status").split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }

    private func read(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n <= 0 { break }
            out += chunk.prefix(n)
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Flips a link's administrative state through libnl (a veth end: its peer loses or regains carrier).
final class LinkFlapper {
    private let socket: OpaquePointer
    private let name: String

    init(name: String) throws {
        guard let socket = nl_socket_alloc() else { throw BenchError("nl_socket_alloc") }
        guard nl_connect(socket, NETLINK_ROUTE) == 0 else { throw BenchError("nl_connect") }
        self.socket = socket
        self.name = name
    }

    deinit { nl_socket_free(socket) }

    func set(up: Bool) throws {
        var original: OpaquePointer?
        guard rtnl_link_get_kernel(socket, 0, name, &original) == 0, let original else { throw BenchError("no link \(name)") }
        defer { rtnl_link_put(original) }
        guard let change = rtnl_link_alloc() else { throw BenchError("rtnl_link_alloc") }
        defer { rtnl_link_put(change) }
        if up { rtnl_link_set_flags(change, 1) } else { rtnl_link_unset_flags(change, 1) }
        let rc = rtnl_link_change(socket, original, change, 0)
        guard rc == 0 else { throw BenchError("rtnl_link_change: \(String(cString: nl_geterror(rc)))") }
    }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.down)))]
}

func ms(_ seconds: Double) -> String {
    let value = (seconds * 1000 * 1000).rounded() / 1000
    return "\(value)"
}

func raiseFileLimit() {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}
