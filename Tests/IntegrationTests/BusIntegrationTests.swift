import Foundation
import ReachdModel
import XCTest

/// org.reachd.Reachability1 on a private dbus-daemon (session-style, with reachd's system-bus policy file
/// included so the daemon validates it): properties through plain dbus-send, PropertiesChanged on a
/// real link change, CheckHost, and the introspection data equal to dbus/org.reachd.Reachability1.xml.
final class BusIntegrationTests: XCTestCase {
    private var lab: NetLab!
    private var busProcess: Process?
    private var address = ""
    private static let dbusDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../dbus").standardized.path

    override func setUpWithError() throws {
        lab = try NetLab.make()
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon") else { throw XCTSkip("dbus-daemon is not installed") }
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.addLink("wwan0", ipv4: "203.0.113.2/24")
        try lab.hostsFile(["far.test": "198.18.0.5"])
        let socket = lab.directory + "/bus.sock"
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
              </policy>
              <include>\(Self.dbusDirectory)/org.reachd.Reachability1.conf</include>
            </busconfig>
            """
        try config.write(toFile: lab.directory + "/bus.conf", atomically: true, encoding: .utf8)
        // In the foreground (--nofork), its address written to a file the test waits for.
        let output = lab.directory + "/bus.out"
        FileManager.default.createFile(atPath: output, contents: nil)
        let bus = Process()
        bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        bus.arguments = ["--config-file=\(lab.directory)/bus.conf", "--nofork", "--print-address=1"]
        bus.standardOutput = FileHandle(forWritingAtPath: output)
        bus.standardError = FileHandle.nullDevice
        bus.standardInput = FileHandle.nullDevice
        try bus.run()
        busProcess = bus
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, address.isEmpty {
            guard bus.isRunning else { return XCTFail("dbus-daemon rejected the configuration with reachd's policy") }
            address = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").first.map(String.init) ?? ""
            usleep(20_000)
        }
        XCTAssertTrue(address.hasPrefix("unix:path="), address)
        try lab.startDaemon(arguments: ["--bus", "session"], environment: ["DBUS_SESSION_BUS_ADDRESS": address])
    }

    override func tearDown() {
        lab?.tearDown()
        busProcess?.terminate()
        busProcess?.waitUntilExit()
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
        let monitor = Process()
        monitor.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-monitor")
        monitor.arguments = ["--address", address, "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"]
        FileManager.default.createFile(atPath: monitorLog, contents: nil)
        monitor.standardOutput = FileHandle(forWritingAtPath: monitorLog)
        try monitor.run()
        defer { monitor.terminate() }
        usleep(300_000)

        // wired -> wwan: Status, Interface, Metered, MeteredReason and Flags change; Reachable does not.
        try lab.ip("route add default via 203.0.113.1 dev wwan0 metric 50")
        var signal = ""
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !signal.contains("MeteredReason") {
            usleep(100_000)
            signal = (try? String(contentsOfFile: monitorLog, encoding: .utf8)) ?? ""
        }
        for changed in ["\"Status\"", "\"wwan\"", "\"Interface\"", "\"Metered\"", "\"MeteredReason\"", "\"Flags\"", "\"isWWAN\""] {
            XCTAssertTrue(signal.contains(changed), "\(changed) missing in \(signal)")
        }
        XCTAssertFalse(signal.contains("\"Reachable\""), "Reachable did not change: \(signal)")
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

    func testIntrospectionMatchesTheInterfaceFile() throws {
        func interface(_ xml: String) -> String {
            let withoutComments = xml.replacingOccurrences(of: #"<!--[\s\S]*?-->"#, with: "", options: .regularExpression)
            guard let start = withoutComments.range(of: #"<interface name="org.reachd.Reachability1">"#),
                  let end = withoutComments.range(of: "</interface>", range: start.upperBound..<withoutComments.endIndex)
            else { return "" }
            return String(withoutComments[start.lowerBound..<end.upperBound])
                .replacingOccurrences(of: #">\s+<"#, with: "><", options: .regularExpression)
        }
        let exported = try send("org.freedesktop.DBus.Introspectable.Introspect")
        let file = try String(contentsOfFile: Self.dbusDirectory + "/org.reachd.Reachability1.xml", encoding: .utf8)
        XCTAssertFalse(interface(file).isEmpty)
        XCTAssertEqual(interface(exported), interface(file))
    }

    func testMissingBusOnlyWarns() throws {
        lab.stopDaemon()
        try lab.startDaemon(arguments: ["--bus", "session"], environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(lab.directory)/nobus.sock"])
        XCTAssertTrue(lab.log.contains("D-Bus: the session bus cannot be used"), lab.log)
        XCTAssertEqual(try lab.reachctl(["status"]).status, 0, "the socket serves all the same")
    }
}
