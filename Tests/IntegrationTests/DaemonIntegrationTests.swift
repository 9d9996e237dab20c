import Foundation
import Reachability
import ReachdClient
import ReachdProtocol
import ReachdTestSupport
import XCTest

/// The daemon's socket, its shutdown, reachctl and the Swift library against a real reachd in a namespace.
final class DaemonIntegrationTests: XCTestCase {
    private var lab: NetLab!

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addLink("eth0", ipv4: "192.0.2.2/24")
        try lab.addUplink("wwan0", "203.0.113", metric: 200)
    }

    override func tearDown() {
        lab?.tearDown()
    }

    func testBadClientsGetErrorsAndNeverDisturbOthers() throws {
        try lab.startDaemon()
        let watcher = try lab.subscribe()
        let bad = try ReachdConnection(path: lab.socketPath)
        try bad.send(raw: Array("{\"op\":\"status\"\n".utf8))
        try bad.send(raw: Array("{\"op\":\"format-disk\",\"id\":9}\n".utf8))
        try bad.send(raw: [UInt8](repeating: UInt8(ascii: "a"), count: 200_000) + [10])
        try bad.send(raw: [0xff, 0xfe, 0x00, 10])
        var codes: [ProtocolError.Code] = []
        for _ in 0..<4 {
            guard case .error(let error)? = try bad.nextReply(timeout: 30) else { return XCTFail("expected an error reply") }
            codes.append(error.code)
        }
        XCTAssertEqual(codes, [.badJSON, .unknownOp, .lineTooLong, .badJSON])
        try bad.send(Request(op: .ping, id: .number(1)))
        XCTAssertEqual(try bad.nextReply(timeout: 30), .pong(id: .number(1)), "the bad client is still served")

        // A client that vanishes mid-line, and one that floods requests without reading, change nothing for others.
        do {
            let vanishing = try ReachdConnection(path: lab.socketPath)
            try vanishing.send(raw: Array("{\"op\":\"subscr".utf8))
        }
        let flooder = try ReachdConnection(path: lab.socketPath)
        let burst = [UInt8](String(repeating: "{\"op\":\"status\"}\n", count: 2000).utf8)
        for _ in 0..<20 { try? flooder.send(raw: burst) }

        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        let wired = try watcher.waitFor("change after the bad clients") { $0.status == .wired }
        XCTAssertEqual(wired.sequence, watcher.initial.sequence + 1)
        XCTAssertEqual(try lab.reachctl(["status"]).status, 0)
        // The daemon may still be working through the flood when the route event has gone out.
        try eventually("the flooding client to be dropped", detail: "log: \(lab.log.suffix(2000))") {
            lab.log.contains("client does not read its replies; closing it")
        }
    }

    /// reachd accepts its clients itself and writes a subscriber's events to the descriptor it accepted; its metrics
    /// say which way each line went (bench/run prints them), so that a lost fast path is seen.
    func testSubscribersEventsGoStraightToTheSocketsReachdAccepted() throws {
        try lab.startDaemon(config: "[metrics]\nlisten = \"127.0.0.1:19468\"\n")
        let watchers = try (0..<3).map { _ in try lab.subscribe() }
        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        for watcher in watchers { _ = try watcher.waitFor("the change to eth0") { $0.status == .wired } }
        let scrape = try lab.run("ip netns exec \(lab.host) curl -s --max-time 5 http://127.0.0.1:19468/metrics")
        func lines(_ path: String) -> Double? {
            scrape.split(separator: "\n").first { $0.hasPrefix("reachd_subscriber_lines_total{path=\"\(path)\"}") }
                .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
        }
        // Three subscribed replies and three events, each to a socket that takes it whole.
        XCTAssertGreaterThanOrEqual(lines("socket") ?? 0, 6, scrape)
        XCTAssertEqual(lines("queue"), 0, scrape)
    }

    func testSIGTERMShutsDownCleanlyAndRemovesTheSocket() throws {
        try lab.startDaemon()
        let client = try lab.subscribe()
        XCTAssertTrue(FileManager.default.fileExists(atPath: lab.socketPath))
        XCTAssertEqual(lab.stopDaemon(), 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: lab.socketPath))
        XCTAssertThrowsError(try client.connection.nextReply(timeout: 30), "the subscriber sees the connection end")
        // A socket file left by a killed daemon is replaced, not fatal.
        try lab.startDaemon()
        XCTAssertEqual(try lab.reachctl(["ping"]).out, "pong\n")
    }

    func testSecondDaemonOnTheSameSocketIsRefused() throws {
        try lab.startDaemon()
        let second = try lab.run("ip netns exec \(lab.host) \(NetLab.binary("reachd")) --socket \(lab.socketPath) --sysfs-root \(lab.sysfsRoot); echo exit=$?")
        XCTAssertTrue(second.contains("in use by a running daemon"), second)
        XCTAssertTrue(second.contains("exit=1"), second)
        XCTAssertEqual(try lab.reachctl(["ping"]).status, 0, "the first daemon still serves")
    }

    func testReachctl() throws {
        try lab.startDaemon()
        let status = try lab.reachctl(["status"])
        XCTAssertEqual(status.status, 0)
        XCTAssertEqual(status.out, "reachable via WWAN (wwan0), metered (interface kind wwan)\n")

        let json = try lab.reachctl(["status", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any]
        XCTAssertEqual(object?["target"] as? String, "internet")
        XCTAssertEqual(object?["reachable"] as? Bool, true)
        XCTAssertEqual(object?["status"] as? String, "wwan")
        XCTAssertEqual(object?["metered"] as? Bool, true)
        XCTAssertEqual(object?["interface"] as? String, "wwan0")
        XCTAssertEqual(object?["flags"] as? [String], ["reachable", "isWWAN"])
        XCTAssertNotNil(object?["sequence"] as? Int)
        XCTAssertNotNil((object?["timestamp"] as? String).flatMap { Timestamp(rfc3339: $0) })

        let timedOut = try lab.reachctl(["wait", "--unmetered", "--timeout", "0.3"])
        XCTAssertEqual(timedOut.status, 1, "metered link: --unmetered times out")
        XCTAssertTrue(timedOut.err.contains("timed out"), timedOut.err)
        XCTAssertEqual(try lab.reachctl(["wait", "--timeout", "30"]).status, 0)

        // wait --unmetered returns as soon as an unmetered route appears (through a relay that shows when the
        // waiter has its subscription's first verdict, the metered one).
        let relay = try SocketRelay(path: lab.directory + "/relay.sock", target: lab.socketPath)
        let waiter = Process()
        waiter.executableURL = URL(fileURLWithPath: NetLab.binary("reachctl"))
        waiter.arguments = ["wait", "--unmetered", "--timeout", "60", "--socket", relay.path]
        waiter.standardOutput = FileHandle.nullDevice
        try waiter.run()
        try eventually("reachctl wait to have its first verdict") { relay.repliesPassed >= 1 || !waiter.isRunning }
        usleep(200_000)
        XCTAssertTrue(waiter.isRunning, "a metered verdict does not end wait --unmetered")
        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        waiter.waitUntilExit()
        XCTAssertEqual(waiter.terminationStatus, 0)

        try lab.ip("route flush default")
        let down = try lab.reachctl(["status"])
        XCTAssertEqual(down.status, 1)
        XCTAssertEqual(down.out, "not reachable: no IPv4 default route\n")

        let noDaemon = try lab.reachctl(["status", "--socket", lab.directory + "/nothing.sock"])
        XCTAssertEqual(noDaemon.status, 2)
        XCTAssertTrue(noDaemon.err.contains("reachd is not running (no socket at \(lab.directory)/nothing.sock): start it with"), noDaemon.err)
    }

    func testWatchPrintsOneLinePerChange() throws {
        try lab.startDaemon()
        let (process, reader) = try lab.spawnReachctl(["watch", "--json"])
        defer { process.terminate() }
        XCTAssertTrue(try reader.next().contains("\"status\":\"wwan\""))
        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        XCTAssertTrue(try reader.next().contains("\"status\":\"wired\""))
    }

    func testLibraryAsDaemonClient() throws {
        try lab.startDaemon()
        let center = NotificationCenter()
        let monitor = ReachabilityMonitor(source: .daemon(socketPath: lab.socketPath), notificationCenter: center)
        let posted = expectation(forNotification: .reachabilityChanged, object: monitor, notificationCenter: center) { note in
            (note.userInfo?["verdict"] as? StampedVerdict)?.verdict.status == .wired
        }
        let unreachable = expectation(description: "whenUnreachable")
        monitor.whenUnreachable = { _ in unreachable.fulfill() }
        try monitor.startNotifier()
        defer { monitor.stopNotifier() }
        XCTAssertEqual(monitor.verdict?.verdict.status, .wwan)
        XCTAssertEqual(monitor.connection, .cellular)
        let stream = monitor.updates

        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        wait(for: [posted], timeout: 30)
        XCTAssertEqual(monitor.connection, .wifi, "wired reads as WiFi in the seeds' three states")
        try lab.ip("route flush default")
        wait(for: [unreachable], timeout: 30)

        let statuses = collect(stream, count: 3)
        XCTAssertEqual(statuses, [.wwan, .wired, .unreachable])
    }

    func testLibraryInProcessOnNetlink() throws {
        let monitor = ReachabilityMonitor(source: .netlink(sysfsRoot: lab.sysfsRoot), notificationCenter: NotificationCenter())
        try lab.inNamespace { try monitor.startNotifier() }
        defer { monitor.stopNotifier() }
        XCTAssertEqual(monitor.verdict?.verdict.status, .wwan)
        let reachable = expectation(description: "whenReachable with wired")
        monitor.whenReachable = { verdict in if verdict.verdict.status == .wired { reachable.fulfill() } }
        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        wait(for: [reachable], timeout: 30)
        XCTAssertEqual(monitor.verdict?.sequence, 2)
    }

    func testResynchronisesAfterSocketOverflow() throws {
        // A tiny receive buffer and a burst of 3000 addresses while the daemon is stopped (SIGSTOP) overflow the
        // event socket (ENOBUFS) for certain: a daemon that keeps up with the burst (as on a busy machine, where
        // `ip` is slow too) would prove nothing.
        try lab.startDaemon(arguments: ["--netlink-receive-buffer", "4096"])
        let client = try lab.subscribe()
        let batch = lab.directory + "/burst.batch"
        let lines = (0..<3000).map { "address add 10.\(200 + $0 / 60000).\($0 / 250 % 240).\($0 % 250 + 1)/32 dev eth0" }
        try lines.joined(separator: "\n").write(toFile: batch, atomically: true, encoding: .utf8)
        try lab.signalDaemon(SIGSTOP)
        try lab.run("ip -n \(lab.host) -batch \(batch)")
        try lab.signalDaemon(SIGCONT)
        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        // Thousands of events and a resynchronisation of links and addresses: slow on a loaded machine, so a
        // generous deadline. The route table is not dumped again: its own socket did not overflow.
        try client.waitFor("the route added after the overflow", timeout: 120) { $0.status == .wired }
        try eventually("the overflow to be logged", detail: "overflow was detected: \(lab.log.suffix(2000))") {
            lab.log.contains("resynchronising links, addresses, rules and netconf")
        }
        XCTAssertFalse(lab.log.contains("resynchronising the default routes"), "the route socket saw nothing of the burst")
    }

    /// A set wall clock (as at every resume from suspend; here a step of the host's clock by 1 ns and back): the
    /// network is read again, and changes after it are followed on the new caches.
    func testReadsTheNetworkAgainWhenTheClockIsSet() throws {
        try lab.startDaemon()
        let client = try lab.subscribe()
        try client.waitFor("wwan0's route") { $0.status == .wwan }
        try ClockStep.byANanosecondAndBack()
        try eventually("the network read again", detail: String(lab.log.suffix(2000))) {
            lab.log.contains("reading links, addresses, rules, netconf and the default routes again")
        }
        try lab.ip("route add default via 192.0.2.1 dev eth0 metric 100")
        try client.waitFor("the route added after the reading") { $0.status == .wired }
    }

    private func collect(_ stream: AsyncStream<StampedVerdict>, count: Int) -> [ReachabilityStatus] {
        let box = StatusBox()
        let done = expectation(description: "stream")
        Task {
            var seen: [ReachabilityStatus] = []
            for await verdict in stream {
                seen.append(verdict.verdict.status)
                if seen.count == count { break }
            }
            box.set(seen)
            done.fulfill()
        }
        wait(for: [done], timeout: 30)
        return box.value
    }
}

private final class StatusBox: @unchecked Sendable {
    private let lock = NSLock()
    private var statuses: [ReachabilityStatus] = []
    func set(_ value: [ReachabilityStatus]) { lock.withLock { statuses = value } }
    var value: [ReachabilityStatus] { lock.withLock { statuses } }
}
