import Foundation
import ReachdClient
import ReachdModel
import ReachdProtocol
import XCTest

/// A throw-away network lab: a namespace for reachd ("host") and one for the far ends of its veth links
/// ("peer"), a temp directory with the socket, config and a fake sysfs, and the daemon under test.
/// Everything is removed in `tearDown()`, also when a test fails.
final class NetLab {
    private static let counter = Counter()

    let host: String
    let peer: String
    let directory: String
    var socketPath: String { directory + "/reachd.sock" }
    var logPath: String { directory + "/reachd.log" }
    var sysfsRoot: String { directory + "/sys" }
    /// The daemon's networkd state directory (`--networkd-root`): the host's own is none of the tests' business.
    var networkdRoot: String { directory + "/netif" }
    private var daemon: Process?

    /// Skips the test where namespaces cannot be made (not root, no iproute2).
    static func make() throws -> NetLab {
        guard getuid() == 0 else { throw XCTSkip("integration tests need root for network namespaces") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") || FileManager.default.isExecutableFile(atPath: "/sbin/ip") else {
            throw XCTSkip("iproute2 (ip) is not installed")
        }
        return try NetLab()
    }

    private init() throws {
        let id = "rdt\(getpid() % 100000)x\(Self.counter.next())"
        host = id + "h"
        peer = id + "p"
        directory = NSTemporaryDirectory() + "reachd-lab-" + id
        try FileManager.default.createDirectory(atPath: directory + "/sys/class/net", withIntermediateDirectories: true)
        try run("ip netns add \(host)")
        try run("ip netns add \(peer)")
        try ip("link set lo up")
    }

    func tearDown() {
        stopDaemon()
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(host)")
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(peer)")
        _ = try? run("ip netns del \(host)")
        _ = try? run("ip netns del \(peer)")
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: - Shell

    /// Runs a shell command; throws with its output when it fails.
    @discardableResult
    func run(_ command: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exec 2>&1; " + command]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw LabError("`\(command)` failed (\(process.terminationStatus)): \(output)")
        }
        return output
    }

    /// `ip -n HOST ARGS`.
    func ip(_ arguments: String) throws { try run("ip -n \(host) \(arguments)") }

    /// `ip -n PEER ARGS`.
    func peerIP(_ arguments: String) throws { try run("ip -n \(peer) \(arguments)") }

    /// A command inside the host namespace.
    func inHost(_ command: String) throws { try run("ip netns exec \(host) \(command)") }

    /// Runs `body` on this thread inside the lab's network namespace (netlink sockets made there stay there).
    func inNamespace<T>(_ body: () throws -> T) throws -> T {
        let own = open("/proc/thread-self/ns/net", O_RDONLY)
        let lab = open("/run/netns/\(host)", O_RDONLY)
        defer { close(own); close(lab) }
        guard own >= 0, lab >= 0, Self.setNetworkNamespace(lab) == 0 else { throw LabError("cannot enter namespace \(host)") }
        defer { _ = Self.setNetworkNamespace(own) }
        return try body()
    }

    /// `setns(fd, CLONE_NEWNET)`; glibc declares it only with _GNU_SOURCE, so look it up.
    private static func setNetworkNamespace(_ fd: Int32) -> Int32 {
        typealias SetNS = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "setns") else { return -1 }
        return unsafeBitCast(symbol, to: SetNS.self)(fd, 0x4000_0000)
    }

    // MARK: - Links

    /// A veth pair: `name` in the host namespace, its far end (same name) in the peer namespace; both up.
    func addLink(_ name: String, ipv4: String? = nil, ipv6: String? = nil) throws {
        try run("ip link add \(name) netns \(host) type veth peer name \(name) netns \(peer)")
        if let ipv4 { try ip("addr add \(ipv4) dev \(name)") }
        if let ipv6 { try ip("addr add \(ipv6) dev \(name) nodad") }
        try peerIP("link set \(name) up")
        try ip("link set \(name) up")
        // The kernel sets a link running (IFF_RUNNING) a moment after its carrier comes, from its linkwatch
        // work: a test that starts before would see "not running" verdicts that are true but not its subject.
        try eventually("\(name) running") { try run("ip -n \(host) -o link show \(name)").contains("state UP") }
    }

    /// A link on the /24 `prefix` (it gets `prefix.2`) with a default route via `prefix.1` at `metric`.
    func addUplink(_ name: String, _ prefix: String, metric: Int) throws {
        try addLink(name, ipv4: "\(prefix).2/24")
        try ip("route add default via \(prefix).1 dev \(name) metric \(metric)")
    }

    /// Takes away (or gives back) carrier on `name` by downing its far end.
    func setCarrier(_ name: String, _ on: Bool) throws {
        try peerIP("link set \(name) \(on ? "up" : "down")")
    }

    /// `/etc/netns/HOST/hosts` (seen as /etc/hosts by the daemon) and a resolv.conf whose only name server is
    /// the namespace's own loopback, so that unknown names fail at once without leaving the namespace.
    func hostsFile(_ entries: [String: String]) throws {
        let dir = "/etc/netns/\(host)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let text = entries.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: "\n") + "\n"
        try ("127.0.0.1 localhost\n" + text).write(toFile: dir + "/hosts", atomically: true, encoding: .utf8)
        try "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n".write(toFile: dir + "/resolv.conf", atomically: true, encoding: .utf8)
    }

    /// `/etc/netns/PEER/hosts`: the names the peer namespace's servers (a proxy) resolve.
    func peerHostsFile(_ entries: [String: String]) throws {
        let dir = "/etc/netns/\(peer)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let text = entries.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: "\n") + "\n"
        try ("127.0.0.1 localhost\n" + text).write(toFile: dir + "/hosts", atomically: true, encoding: .utf8)
    }

    /// Makes `zone` (a name under /usr/share/zoneinfo) the local zone of what runs in the host namespace from now
    /// on (`ip netns exec` bind-mounts it over `/etc/localtime`); later calls rewrite the file in place, which those
    /// already running see there. The first file's time is 2000, so that the C library takes the rewritten one as new.
    func zoneFile(_ zone: String) throws {
        let dir = "/etc/netns/\(host)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: "/usr/share/zoneinfo/" + zone))
        let path = dir + "/localtime"
        let first = !FileManager.default.fileExists(atPath: path)
        if first { _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]) }
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try file.truncate(atOffset: 0)
        try file.write(contentsOf: bytes)
        try file.close()
        let old = timeval(tv_sec: 946_684_800, tv_usec: 0)
        guard !first || utimes(path, [old, old]) == 0 else { throw LabError("utimes \(path): \(String(cString: strerror(errno)))") }
    }

    /// Writes a fake `sysfs/class/net/NAME/uevent`.
    func fakeSysfs(_ name: String, uevent: String) throws {
        let dir = "\(sysfsRoot)/class/net/\(name)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try uevent.write(toFile: dir + "/uevent", atomically: true, encoding: .utf8)
    }

    /// Writes networkd's state file `KIND/IFINDEX` (`leases` or `links`) for link `name` as networkd does: a
    /// temporary file renamed into place; nil `text` removes it.
    func networkdFile(_ kind: String, of name: String, _ text: String?) throws {
        let index = try run("ip -n \(host) -o link show \(name)").prefix { $0 != ":" }
        let dir = "\(networkdRoot)/\(kind)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        guard let text else { return try FileManager.default.removeItem(atPath: "\(dir)/\(index)") }
        try text.write(toFile: "\(dir)/.#\(index)", atomically: false, encoding: .utf8)
        guard rename("\(dir)/.#\(index)", "\(dir)/\(index)") == 0 else { throw NSError(domain: "rename", code: Int(errno)) }
    }

    // MARK: - Daemon

    /// Starts reachd inside the host namespace (behind `wrapper`, a command that execs the rest) and waits
    /// until its socket answers.
    func startDaemon(config: String? = nil, arguments: [String] = [], environment: [String: String] = [:], wrapper: [String] = []) throws {
        var args = ["netns", "exec", host] + wrapper + [Self.binary("reachd"), "--socket", socketPath, "--sysfs-root", sysfsRoot,
                                                      "--networkd-root", networkdRoot, "--log-level", "debug"]
        if let config {
            let path = directory + "/reachd.toml"
            try config.write(toFile: path, atomically: true, encoding: .utf8)
            args += ["--config", path]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        // No D-Bus (nor NetworkManager) unless a test asks for a bus: the machine's system bus is none of the tests' business.
        process.arguments = args + (arguments.contains("--bus") ? [] : ["--bus", "none"])
            + (arguments.contains("--networkmanager") ? [] : ["--networkmanager", "none"]) + arguments
        // The zone is the lab's `/etc/localtime` (see `zoneFile`), never a TZ of the test's own.
        process.environment = ProcessInfo.processInfo.environment.filter { $0.key != "TZ" }.merging(environment) { _, new in new }
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        daemon = process
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let connection = try? ReachdConnection(path: socketPath) {
                try connection.send(Request(op: .ping))
                if case .pong? = try connection.nextReply(timeout: 5) { return }
            }
            guard process.isRunning else { throw LabError("reachd exited (\(process.terminationStatus)): \(log)") }
            usleep(20_000)
        }
        throw LabError("reachd did not answer on \(socketPath): \(log)")
    }

    /// The running daemon's pid (`ip netns exec` execs it, so the process is the daemon itself).
    var daemonPID: Int32? { daemon.flatMap { $0.isRunning ? $0.processIdentifier : nil } }

    /// Sends `signal` to the daemon (`ip netns exec` execs it, so the process is the daemon itself).
    func signalDaemon(_ signal: Int32) throws {
        guard let daemon, daemon.isRunning else { throw LabError("no daemon running") }
        kill(daemon.processIdentifier, signal)
    }

    /// Sends SIGTERM and waits; returns the exit status.
    @discardableResult
    func stopDaemon() -> Int32? {
        guard let daemon, daemon.isRunning else { return self.daemon?.terminationStatus }
        daemon.terminate()
        let deadline = Date().addingTimeInterval(30)
        while daemon.isRunning && Date() < deadline { usleep(10_000) }
        if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL); daemon.waitUntilExit() }
        return daemon.terminationStatus
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The status of the last internet verdict a daemon logged (`… status=wwan [ReachdMonitor] verdict`): what
    /// reachd or reachd-transfers has taken in of the network so far; nil before the first.
    static func lastLoggedVerdict(in log: String) -> String? {
        guard let line = log.split(separator: "\n").last(where: { $0.hasSuffix("[ReachdMonitor] verdict") }),
              let status = line.split(separator: " ").first(where: { $0.hasPrefix("status=") })
        else { return nil }
        return String(status.dropFirst("status=".count))
    }

    /// A subscription to the daemon under test (to `internet`, or to one host).
    func subscribe(host: String? = nil) throws -> Subscriber { try Subscriber(path: socketPath, host: host) }

    /// Runs reachctl against the lab's daemon (unless `arguments` name a socket); returns exit status, stdout and stderr.
    func reachctl(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        try CommandLineIntegrationTests.run(Self.binary("reachctl"), arguments.contains("--socket") ? arguments : arguments + ["--socket", socketPath])
    }

    /// Starts a long-running reachctl (watch) against the lab's daemon; its output is read line by line.
    /// `asUID`: run as that user (and group), without supplementary groups.
    func spawnReachctl(_ arguments: [String], asUID uid: UInt32? = nil) throws -> (process: Process, lines: LineReader) {
        let process = Process()
        let command = [Self.binary("reachctl")] + arguments + ["--socket", socketPath]
        let user = uid.map { ["/usr/bin/setpriv", "--reuid=\($0)", "--regid=\($0)", "--clear-groups"] } ?? []
        process.executableURL = URL(fileURLWithPath: (user + command)[0])
        process.arguments = Array((user + command).dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        return (process, LineReader(pipe.fileHandleForReading))
    }

    /// Tests/Support/activate.py: socket activation as systemd does it (a listening socket as fd 3).
    static let activateScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Support/activate.py").standardized.path

    /// A product built next to the test bundle (override with REACHD_BIN_DIR).
    static func binary(_ name: String) -> String {
        if let dir = ProcessInfo.processInfo.environment["REACHD_BIN_DIR"] { return dir + "/" + name }
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent(name).path
    }
}

/// A subscribed client that collects events.
final class Subscriber {
    let connection: ReachdConnection
    let initial: StampedVerdict
    private(set) var events: [StampedVerdict] = []

    init(path: String, host: String? = nil) throws {
        connection = try ReachdConnection(path: path)
        initial = try connection.verdict(for: Request(op: .subscribe, hosts: host.map { [$0] } ?? []), timeout: 30)
    }

    /// The latest verdict seen.
    var latest: StampedVerdict { events.last ?? initial }

    /// Reads events until `condition` holds for the latest verdict; fails the test after `timeout` seconds.
    @discardableResult
    func waitFor(_ what: String, timeout: Double = 30, file: StaticString = #filePath, line: UInt = #line,
                 _ condition: (Verdict) -> Bool) throws -> StampedVerdict {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition(latest.verdict) {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let reply = try connection.nextReply(timeout: left) else {
                XCTFail("timed out waiting for \(what); last verdict: \(latest.verdict.summary)", file: file, line: line)
                throw LabError("timed out waiting for \(what)")
            }
            if case .event(let verdict) = reply { events.append(verdict) }
        }
        return latest
    }

    /// Events that arrive within `seconds` (to check that nothing more is published).
    func drain(for seconds: Double) throws -> [StampedVerdict] {
        var extra: [StampedVerdict] = []
        let deadline = Date().addingTimeInterval(seconds)
        while deadline.timeIntervalSinceNow > 0 {
            guard let reply = try connection.nextReply(timeout: deadline.timeIntervalSinceNow) else { break }
            if case .event(let verdict) = reply { extra.append(verdict); events.append(verdict) }
        }
        return extra
    }
}

/// Polls `condition` every 20 ms until it holds; after `timeout` seconds fails the test (with `detail`) and
/// throws. For conditions that become true on their own: a deadline costs nothing while the test passes, so
/// it is generous (a loaded machine is slow, not wrong).
func eventually(_ what: String, timeout: Double = 30, file: StaticString = #filePath, line: UInt = #line,
                detail: @autoclosure () -> String = "", _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while try !condition() {
        guard Date() < deadline else {
            let more = detail()
            XCTFail("timed out after \(timeout) s waiting for \(what)\(more.isEmpty ? "" : "; " + more)", file: file, line: line)
            throw LabError("timed out waiting for \(what)")
        }
        usleep(20_000)
    }
}

/// `value()` once `done` holds for it, or its last reading after `timeout` seconds (for an assertion to show):
/// for things that are logged a moment after the test could see their effect.
func waited<T>(timeout: Double = 30, for value: () throws -> T, until done: (T) -> Bool) rethrows -> T {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        let current = try value()
        if done(current) || Date() >= deadline { return current }
        usleep(20_000)
    }
}

struct LabError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int { lock.withLock { value += 1; return value } }
}

/// Reads lines from a pipe with a timeout.
final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    func next(timeout: Double = 30) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = Data(buffer[(newline + 1)...])
                return String(decoding: line, as: UTF8.self)
            }
            var entry = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            let left = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            guard left > 0, poll(&entry, 1, left) > 0 else { throw LabError("no line within \(timeout)s") }
            let chunk = handle.availableData
            guard !chunk.isEmpty else { throw LabError("pipe closed") }
            buffer.append(chunk)
        }
    }
}

/// A Unix socket at `path` that passes one client through to the socket at `target`, both ways, and counts
/// the lines the target sent back: a test can so see that a client process (reachctl) has had its answers.
final class SocketRelay {
    let path: String
    private let listener: Int32
    private let replies = LineCount()

    init(path: String, target: String) throws {
        self.path = path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        guard listener >= 0, Self.withAddress(path, { bind(listener, $0, $1) }) == 0, Foundation.listen(listener, 1) == 0 else {
            throw LabError("cannot listen on \(path): \(String(cString: strerror(errno)))")
        }
        let replies = self.replies
        Thread.detachNewThread {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            let upstream = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(upstream) }
            guard Self.withAddress(target, { connect(upstream, $0, $1) }) == 0 else { return }
            var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)]
            var buffer = [UInt8](repeating: 0, count: 65536)
            while poll(&fds, 2, -1) > 0 {
                for (from, to) in [(0, 1), (1, 0)] where fds[from].revents != 0 {
                    let n = read(fds[from].fd, &buffer, buffer.count)
                    guard n > 0, send(fds[to].fd, buffer, n, Int32(MSG_NOSIGNAL)) == n else { return }
                    if from == 1 { replies.add(buffer.prefix(n).filter { $0 == 10 }.count) }
                }
            }
        }
    }

    /// Stops listening (an `accept` still waiting returns).
    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    /// Lines the target has sent to the client so far.
    var repliesPassed: Int { replies.value }

    private static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8.prefix($0.count - 1)) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    private final class LineCount: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func add(_ n: Int) { lock.withLock { count += n } }
        var value: Int { lock.withLock { count } }
    }
}
