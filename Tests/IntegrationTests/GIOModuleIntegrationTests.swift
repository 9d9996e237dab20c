import Foundation
import XCTest

/// The GIO module (gio/, docs/gio.md) as a GLib app sees it: Tests/Support/gio_monitor.py (python3-gi) in the
/// lab's namespace, with GIO_EXTRA_MODULES at the built module and the private bus as its system bus, where
/// reachd serves. eth0 (default route, metric 100) and wwan0 (no default route) as in the bus tests.
final class GIOModuleIntegrationTests: XCTestCase {
    private var lab: NetLab!
    private var bus: PrivateBus?
    private var probes: [GLibProbe] = []

    /// The bus's activation files: none, unless a test makes reachd activatable.
    private var services: String { lab.directory + "/services" }

    /// `make gio-module` puts it there; `make test` builds it first.
    static let moduleDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../.build/gio").standardized.path

    override func setUpWithError() throws {
        lab = try NetLab.make()
        guard FileManager.default.fileExists(atPath: Self.moduleDirectory + "/libgioreachd.so") else {
            XCTFail("the GIO module is not built: run `make gio-module` (make test does)")
            throw LabError("no \(Self.moduleDirectory)/libgioreachd.so")
        }
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.addLink("wwan0", ipv4: "203.0.113.2/24")
        try lab.hostsFile(["ruled.test": "198.19.1.1"])
        try FileManager.default.createDirectory(atPath: services, withIntermediateDirectories: true)
        bus = try PrivateBus(directory: lab.directory, policies: ["org.reachd.Reachability1.conf"], serviceDirectory: services)
        try startReachd()
    }

    override func tearDown() {
        for probe in probes { probe.stop() }
        lab?.tearDown()
        bus?.stop()
    }

    private func startReachd() throws {
        try lab.startDaemon(arguments: ["--bus", "session"], environment: ["DBUS_SESSION_BUS_ADDRESS": bus!.address])
        try bus!.waitForOwner(of: "org.reachd.Reachability1")
    }

    private func reachdOnTheBus() throws -> Bool {
        try lab.run("dbus-send --bus=\(bus!.address) --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus " +
                    "org.freedesktop.DBus.NameHasOwner string:org.reachd.Reachability1").contains("boolean true")
    }

    /// A GLib program in the lab's namespace that has its default network monitor.
    private func probe(environment: [String: String] = [:]) throws -> GLibProbe {
        let probe = try GLibProbe(namespace: lab.host, environment: [
            "GIO_EXTRA_MODULES": Self.moduleDirectory, "DBUS_SYSTEM_BUS_ADDRESS": bus!.address,
            // A GLib warning or critical (a misused GTask, a type GIO refuses) ends the program: the test fails.
            "G_DEBUG": "fatal-warnings",
        ].merging(environment) { _, new in new })
        probes.append(probe)
        return probe
    }

    func testTheDefaultMonitorFollowsReachdOnceForEachChange() throws {
        let app = try probe()
        XCTAssertEqual(app.ready["type"] as? String, "ReachdNetworkMonitor")
        XCTAssertEqual(app.answers(app.ready), Answers(available: true, metered: false, connectivity: "full"))
        let initialised = try app.initAsync("ReachdNetworkMonitor")
        XCTAssertEqual(app.answers(initialised), app.answers(app.ready), "GAsyncInitable: \(initialised)")

        // Each step changes the verdict once; the app sees exactly one network-changed with the new answers.
        let steps: [(String, () throws -> Void, Answers)] = [
            ("wwan0 takes the default route", { try self.lab.ip("route add default via 203.0.113.1 dev wwan0 metric 50") },
             Answers(available: true, metered: true, connectivity: "full")),
            ("back to eth0", { try self.lab.ip("route del default via 203.0.113.1 dev wwan0 metric 50") },
             Answers(available: true, metered: false, connectivity: "full")),
            ("eth0 loses carrier", { try self.lab.setCarrier("eth0", false) },
             Answers(available: false, metered: false, connectivity: "local")),
            ("eth0 gets carrier back", { try self.lab.setCarrier("eth0", true) },
             Answers(available: true, metered: false, connectivity: "full")),
        ]
        for (what, change, expected) in steps {
            try change()
            let changed = try app.next("changed", what: what)
            XCTAssertEqual(app.answers(changed), expected, what)
            XCTAssertEqual(changed["signalled"] as? Bool, expected.available, "network-changed's argument: \(what)")
            XCTAssertEqual(try app.sync().filter { $0["event"] as? String == "changed" }.count, 0,
                           "one network-changed for \(what)")
        }
    }

    func testNoDefaultRouteInTheMainTableIsNotAvailable() throws {
        try lab.ip("route add default via 203.0.113.1 dev wwan0 table 100")
        let app = try probe()
        XCTAssertEqual(app.answers(app.ready).available, true)
        try lab.ip("route del default via 192.0.2.1 dev eth0")
        let changed = try app.next("changed", what: "the main table's default route gone")
        XCTAssertEqual(app.answers(changed), Answers(available: false, metered: false, connectivity: "local"),
                       "a default route in table 100 alone (no rule uses it) is no way out")
    }

    func testConnectivityFollowsReachdsCheck() throws {
        // The check server behind eth0's gateway: a captive portal's redirect, or no answer at all.
        try lab.peerIP("addr add 192.0.2.1/24 dev eth0")
        let script = lab.directory + "/check.py"
        try """
            import http.server, time
            class Handler(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    if self.path == "/redirect":
                        self.send_response(302); self.send_header("Location", "http://192.0.2.1:8080/login")
                        self.send_header("Content-Length", "0"); self.end_headers()
                    else:
                        time.sleep(20)
                def log_message(self, *args):
                    pass
            http.server.ThreadingHTTPServer(("192.0.2.1", 8080), Handler).serve_forever()
            """.write(toFile: script, atomically: true, encoding: .utf8)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        server.arguments = ["netns", "exec", lab.peer, "/usr/bin/python3", script]
        try server.run()
        defer { server.terminate(); server.waitUntilExit() }
        try eventually("the check server to listen") {
            (try? lab.inHost("timeout 5 bash -c 'exec 3<>/dev/tcp/192.0.2.1/8080'")) != nil
        }

        for (path, expected) in [("/redirect", "portal"), ("/hang", "limited")] {
            lab.stopDaemon()
            try lab.startDaemon(config: "[connectivity]\nurl = \"http://192.0.2.1:8080\(path)\"\ntimeout_seconds = 0.5\ninterval_seconds = 0\n",
                                arguments: ["--bus", "session"], environment: ["DBUS_SESSION_BUS_ADDRESS": bus!.address])
            try bus!.waitForOwner(of: "org.reachd.Reachability1")
            let app = try probe()
            var answers = app.answers(app.ready)
            while answers.connectivity != expected {
                XCTAssertEqual(answers, Answers(available: true, metered: false, connectivity: "full"), "before the check: unknown counts as full")
                answers = app.answers(try app.next("changed", what: "connectivity \(expected)"))
            }
            XCTAssertEqual(answers, Answers(available: true, metered: false, connectivity: expected), path)
        }
    }

    func testCanReachAsksTheKernelsRouteDecision() throws {
        // Main table: default via eth0, but 198.18.0.0/24 unreachable and 198.19.0.0/16 prohibited; a rule sends
        // 198.19.1.0/24 to table 100 (default via wwan0). No IPv6 route at all.
        try lab.ip("route add unreachable 198.18.0.0/24")
        try lab.ip("route add prohibit 198.19.0.0/16")
        try lab.ip("route add default via 203.0.113.1 dev wwan0 table 100")
        try lab.ip("rule add to 198.19.1.0/24 table 100")
        let app = try probe()
        let expected: [(String, String?)] = [
            ("192.0.2.77", nil),
            ("198.51.100.1", nil),
            ("198.18.0.5", "host-unreachable"),
            ("198.19.1.1", nil),
            ("ruled.test", nil),
            ("198.19.2.1", "host-unreachable"),
            ("2001:db8::1", "network-unreachable"),
        ]
        for (host, error) in expected {
            let answer = try app.canReach(host)
            for mode in ["sync", "async"] {
                let outcome = answer[mode] as? [String: Any] ?? [:]
                XCTAssertEqual(outcome["reachable"] as? Bool, error == nil, "\(mode) can_reach \(host): \(outcome)")
                XCTAssertEqual(outcome["error"] as? String, error, "\(mode) can_reach \(host): \(outcome)")
            }
        }
    }

    func testReachdStoppedGLibsOwnMonitorTakesOverAndReachdReturns() throws {
        let running = try probe()
        XCTAssertEqual(running.ready["type"] as? String, "ReachdNetworkMonitor")
        let before = try running.status()

        lab.stopDaemon()
        try eventually("reachd off the bus") { try !reachdOnTheBus() }
        let fallback = try probe()
        XCTAssertEqual(fallback.ready["type"] as? String, "GNetworkMonitorNetlink", "reachd neither running nor activatable")
        XCTAssertLessThan(fallback.ready["init_ms"] as? Double ?? .infinity, 1000, "no wait for an absent reachd")
        let failed = try fallback.initAsync("ReachdNetworkMonitor")
        XCTAssertTrue((failed["error"] as? String ?? "").contains("ServiceUnknown"), "GAsyncInitable fails too: \(failed)")

        // While reachd is away the running app keeps its answers; the next reachd's verdict comes as one change.
        XCTAssertEqual(running.answers(try running.status()), Answers(available: true, metered: false, connectivity: "full"))
        try lab.ip("route add default via 203.0.113.1 dev wwan0 metric 50")
        try startReachd()
        let changed = try running.next("changed", what: "the new reachd's verdict")
        XCTAssertEqual(running.answers(changed), Answers(available: true, metered: true, connectivity: "full"))
        XCTAssertEqual(try running.sync().filter { $0["event"] as? String == "changed" }.count, 0, "one network-changed")

        // A restart that finds the same verdict changes nothing for the app, and leaks nothing in it.
        lab.stopDaemon()
        try startReachd()
        XCTAssertEqual(try running.sync().filter { $0["event"] as? String == "changed" }.count, 0, "same verdict, no signal")
        let after = try running.status()
        XCTAssertEqual(after["fds"] as? Int, before["fds"] as? Int, "open file descriptors after two restarts of reachd")
        XCTAssertEqual(after["threads"] as? Int, before["threads"] as? Int, "threads after two restarts of reachd")

        let returned = try probe()
        XCTAssertEqual(returned.ready["type"] as? String, "ReachdNetworkMonitor")
        XCTAssertEqual(returned.answers(returned.ready), Answers(available: true, metered: true, connectivity: "full"))
    }

    func testAnActivatableReachdIsStartedForTheApp() throws {
        lab.stopDaemon()
        try eventually("reachd off the bus") { try !reachdOnTheBus() }
        // What dbus/org.reachd.Reachability1.service asks of systemd, here run by the bus itself.
        let reachd = ["/usr/sbin/ip", "netns", "exec", lab.host, "/usr/bin/env", "DBUS_SESSION_BUS_ADDRESS=\(bus!.address)",
                      NetLab.binary("reachd"), "--bus", "session", "--socket", lab.socketPath, "--sysfs-root", lab.sysfsRoot,
                      "--networkmanager", "none"]
        try "[D-BUS Service]\nName=org.reachd.Reachability1\nExec=\(reachd.joined(separator: " "))\n"
            .write(toFile: services + "/org.reachd.Reachability1.service", atomically: true, encoding: .utf8)

        let app = try probe()
        defer { stopActivatedReachd() }
        XCTAssertTrue(try reachdOnTheBus(), "the app's monitor started reachd")
        // Initialisation waits at most 500 ms (REACHD_ACTIVATION_TIMEOUT_MS) for reachd; a reachd that takes
        // longer (a debug build on a loaded machine) serves the next app.
        let initMilliseconds = app.ready["init_ms"] as? Double ?? .infinity
        if initMilliseconds < 500 {
            XCTAssertEqual(app.ready["type"] as? String, "ReachdNetworkMonitor", "started within \(initMilliseconds) ms")
            XCTAssertEqual(app.answers(app.ready), Answers(available: true, metered: false, connectivity: "full"))
        } else {
            XCTAssertEqual(app.ready["type"] as? String, "GNetworkMonitorNetlink", "gave up after \(initMilliseconds) ms")
            XCTAssertEqual(try probe().ready["type"] as? String, "ReachdNetworkMonitor", "the next app")
        }
    }

    /// Ends the reachd the bus started (not the lab's child) and waits until it has left the bus.
    private func stopActivatedReachd() {
        guard let reply = try? lab.run("dbus-send --bus=\(bus!.address) --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus " +
                                       "org.freedesktop.DBus.GetConnectionUnixProcessID string:org.reachd.Reachability1"),
              let pid = reply.split(separator: " ").last.flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
        else { return }
        kill(pid, SIGTERM)
        try? eventually("the activated reachd off the bus") { try !reachdOnTheBus() }
    }

    func testGIOUseNetworkMonitorTurnsItOff() throws {
        let app = try probe(environment: ["GIO_USE_NETWORK_MONITOR": "netlink"])
        XCTAssertEqual(app.ready["type"] as? String, "GNetworkMonitorNetlink")
    }
}

/// What a GNetworkMonitor answers.
struct Answers: Equatable {
    var available: Bool?
    var metered: Bool?
    var connectivity: String?
}

/// Tests/Support/gio_monitor.py running in a namespace: its JSON lines, and commands to it.
final class GLibProbe {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Support/gio_monitor.py").standardized.path

    private let process = Process()
    private let input = Pipe()
    private let lines: LineReader
    /// The first line: the monitor's type, start-up time and answers.
    private(set) var ready: [String: Any] = [:]

    init(namespace: String, environment: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        // The system's python3 (python3-gi), not whatever python3 comes first on PATH.
        process.arguments = ["netns", "exec", namespace, "/usr/bin/python3", Self.script]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = input
        lines = LineReader(output.fileHandleForReading)
        try process.run()
        ready = try next("ready", what: "the default network monitor")
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    /// The next line of `event` (other lines before it fail the test).
    func next(_ event: String, what: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let found = try read(what: what)
        XCTAssertEqual(found["event"] as? String, event, "\(what): \(found)", file: file, line: line)
        return found
    }

    private func read(what: String) throws -> [String: Any] {
        let text: String
        do { text = try lines.next(timeout: 30) } catch { throw LabError("\(what): no line from the GLib program (\(error))") }
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw LabError("\(what): not a JSON object: \(text)")
        }
        return object
    }

    private func send(_ command: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((command + "\n").utf8))
    }

    /// A round trip to reachd on the app's bus connection: the lines before its answer (all that reachd's
    /// signals so far have caused).
    func sync() throws -> [[String: Any]] {
        try send("sync")
        var before: [[String: Any]] = []
        while true {
            let line = try read(what: "sync")
            if line["event"] as? String == "synced" { return before }
            before.append(line)
        }
    }

    func status() throws -> [String: Any] {
        try send("status")
        return try next("status", what: "status")
    }

    func canReach(_ host: String) throws -> [String: Any] {
        try send("can_reach \(host)")
        return try next("can_reach", what: "can_reach \(host)")
    }

    /// A new monitor of `type` through GAsyncInitable: its answers, or its "error".
    func initAsync(_ type: String) throws -> [String: Any] {
        try send("init_async \(type)")
        return try next("initialised", what: "init_async \(type)")
    }

    func answers(_ line: [String: Any]) -> Answers {
        Answers(available: line["available"] as? Bool, metered: line["metered"] as? Bool, connectivity: line["connectivity"] as? String)
    }
}
