import Foundation
import ReachdModel
import XCTest

/// org.reachd.Reachability1 on a private dbus-daemon (session-style, with reachd's system-bus policy file
/// included so the daemon validates it): properties through plain dbus-send, PropertiesChanged on a
/// real link change, CheckHost, and the introspection data equal to dbus/org.reachd.Reachability1.xml.
final class BusIntegrationTests: XCTestCase {
    private var lab: NetLab!
    private var bus: PrivateBus?
    private var address: String { bus?.address ?? "" }

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.addLink("wwan0", ipv4: "203.0.113.2/24")
        try lab.hostsFile(["far.test": "198.18.0.5"])
        bus = try PrivateBus(directory: lab.directory, policies: ["org.reachd.Reachability1.conf"])
        try lab.startDaemon(arguments: ["--bus", "session"], environment: ["DBUS_SESSION_BUS_ADDRESS": address])
        try bus!.waitForOwner(of: "org.reachd.Reachability1")
    }

    override func tearDown() {
        lab?.tearDown()
        bus?.stop()
    }

    private func send(_ arguments: String) throws -> String {
        try lab.run("dbus-send --bus=\(address) --print-reply --dest=org.reachd.Reachability1 /org/reachd/Reachability1 \(arguments)")
    }

    private func property(_ name: String) throws -> String {
        try send("org.freedesktop.DBus.Properties.Get string:org.reachd.Reachability1 string:\(name)")
    }

    func testPropertiesAndPropertiesChanged() throws {
        XCTAssertTrue(try property("Status").contains(#"string "wired""#))
        XCTAssertTrue(try property("Reachable").contains("boolean true"))
        XCTAssertTrue(try property("Interface").contains(#"string "eth0""#))
        XCTAssertTrue(try property("Flags").contains(#"string "reachable""#))
        XCTAssertTrue(try property("Connectivity").contains(#"string "unknown""#))

        let monitorLog = lab.directory + "/monitor.log"
        let monitor = try bus!.startMonitor("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'", output: monitorLog)
        defer { monitor.terminate() }

        // wired -> wwan: Status, Interface, Metered, MeteredReason, Flags and Cost change; Reachable and Roaming do not.
        try lab.ip("route add default via 203.0.113.1 dev wwan0 metric 50")
        var signal = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !signal.contains("MeteredReason") {
            usleep(100_000)
            signal = (try? String(contentsOfFile: monitorLog, encoding: .utf8)) ?? ""
        }
        for changed in ["\"Status\"", "\"wwan\"", "\"Interface\"", "\"Metered\"", "\"MeteredReason\"", "\"Flags\"", "\"isWWAN\"", "\"Cost\"", "\"fixed\""] {
            XCTAssertTrue(signal.contains(changed), "\(changed) missing in \(signal)")
        }
        XCTAssertFalse(signal.contains("\"Reachable\""), "Reachable did not change: \(signal)")
        XCTAssertFalse(signal.contains("\"Roaming\""), "Roaming did not change: \(signal)")
        XCTAssertEqual(signal.components(separatedBy: "member=PropertiesChanged").count - 1, 1, "one signal per change")
        XCTAssertTrue(try property("Status").contains(#"string "wwan""#))
    }

    func testCheckHost() throws {
        try lab.ip("route add 198.18.0.0/15 via 203.0.113.1 dev wwan0")
        let reply = try send("org.reachd.Reachability1.CheckHost string:far.test")
        for expected in [#"string "Target""#, #"string "far.test""#, #"string "Status""#, #"string "wwan""#, #"string "198.18.0.5""#] {
            XCTAssertTrue(reply.contains(expected), "\(expected) missing in \(reply)")
        }
        XCTAssertThrowsError(try send("org.reachd.Reachability1.CheckHost string:'bad name'")) { error in
            XCTAssertTrue("\(error)".contains("InvalidArgs"), "\(error)")
        }
    }

    func testReachctlReadsThePropertiesOverDBus() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: NetLab.binary("reachctl"))
        process.arguments = ["status", "--dbus", "session"]
        process.environment = ["DBUS_SESSION_BUS_ADDRESS": address]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(output, try lab.reachctl(["status"]).out, "the same verdict through D-Bus and through the socket")
        XCTAssertEqual(output, "reachable via wired (eth0), unmetered\n")
    }

    func testIntrospectionMatchesTheInterfaceFile() throws {
        let exported = try send("org.freedesktop.DBus.Introspectable.Introspect")
        let file = try String(contentsOfFile: PrivateBus.dbusDirectory + "/org.reachd.Reachability1.xml", encoding: .utf8)
        XCTAssertFalse(PrivateBus.interface("org.reachd.Reachability1", in: file).isEmpty)
        XCTAssertEqual(PrivateBus.interface("org.reachd.Reachability1", in: exported), PrivateBus.interface("org.reachd.Reachability1", in: file))
    }

    func testMissingBusOnlyWarns() throws {
        lab.stopDaemon()
        try lab.startDaemon(arguments: ["--bus", "session"], environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(lab.directory)/nobus.sock"])
        // The socket serves before the daemon tries the bus.
        try eventually("the warning about the bus", detail: lab.log) { lab.log.contains("D-Bus: the session bus cannot be used") }
        XCTAssertEqual(try lab.reachctl(["status"]).status, 0, "the socket serves all the same")
    }
}
