import Foundation
import ReachdTransferModel
import XCTest

/// org.reachd.Transfers1 on a private dbus-daemon (with the repository's policy file included), served by the
/// lab's system instance: the methods through busctl as root and as another user (caller identity from the
/// bus), JobChanged, and the introspection data equal to dbus/org.reachd.Transfers1.xml.
final class TransferBusIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    private var bus: PrivateBus?
    private static let object = "org.reachd.Transfers1 /org/reachd/Transfers1 org.reachd.Transfers1"

    override func setUpWithError() throws {
        lab = try TransferLab()
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/busctl") else { throw XCTSkip("busctl is not installed") }
        bus = try PrivateBus(directory: lab.lab.directory, policies: ["org.reachd.Transfers1.conf"],
                             users: ["reachd-transfers": lab.daemonUser.name])
        try lab.startTestServer()
        try lab.startDaemon(arguments: ["--bus", "session"], environment: ["DBUS_SESSION_BUS_ADDRESS": bus!.address])
        try bus!.waitForOwner(of: "org.reachd.Transfers1")
    }

    override func tearDown() {
        lab?.tearDown()
        bus?.stop()
    }

    /// `busctl call` on the private bus, optionally as another user; throws with busctl's message on failure.
    private func call(_ method: String, _ arguments: String = "", user: String? = nil, groups: [UInt32]? = nil) throws -> String {
        let busctl = "busctl --address=\(bus!.address) call \(Self.object) \(method) \(arguments)"
        return try lab.lab.run(user.map { TransferLab.asUser($0, groups: groups).joined(separator: " ") + " " + busctl } ?? busctl)
    }

    private func id(in reply: String) throws -> String {
        let match = try XCTUnwrap(reply.range(of: #""Id" s "[0-9a-f]{16}""#, options: .regularExpression), reply)
        return String(reply[match].dropFirst(8).dropLast())
    }

    func testMethodsAndJobChanged() throws {
        let sum = try lab.serve("b.bin", bytes: 500_000)
        let monitorLog = lab.lab.directory + "/monitor.log"
        let monitor = try bus!.startMonitor("type='signal',interface='org.reachd.Transfers1'", output: monitorLog)
        defer { monitor.terminate(); monitor.waitUntilExit() }

        let added = try call("Add", "'ssa{sv}' \(lab.url("b.bin")) \(lab.out)/b.bin 2 Priority s high Sha256 s \(sum)")
        XCTAssertTrue(added.hasPrefix("a{sv} 16 "), added)
        XCTAssertTrue(added.contains(#""MaxRate" x 0"#), added)
        XCTAssertTrue(added.contains(#""Constraints" s """#), "no constraints: empty: \(added)")
        XCTAssertTrue(added.contains(#""Priority" s "high""#) && added.contains(#""Uid" u 0"#), added)
        let id = try id(in: added)
        try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/b.bin"), sum)
        XCTAssertTrue(try call("Show", "s \(id)").contains(#""State" s "completed""#))
        XCTAssertTrue(try call("List").hasPrefix("aa{sv} 1 "))

        let deadline = Date().addingTimeInterval(30)
        var signals = ""
        while Date() < deadline, !signals.contains("\"completed\"") {
            usleep(50_000)
            signals = (try? String(contentsOfFile: monitorLog, encoding: .utf8)) ?? ""
        }
        XCTAssertTrue(signals.contains("member=JobChanged"), signals)
        XCTAssertTrue(signals.contains("string \"\(id)\""), signals)
        XCTAssertTrue(signals.contains("string \"completed\""), signals)
        XCTAssertFalse(signals.contains(lab.out), "JobChanged carries no paths")

        XCTAssertThrowsError(try call("Show", "s not-an-id")) { XCTAssertTrue("\($0)".contains("job id"), "\($0)") }
        XCTAssertThrowsError(try call("Add", "'ssa{sv}' \(lab.url("b.bin")) \(lab.out)/c.bin 1 Colour s red")) {
            XCTAssertTrue("\($0)".contains("unknown option Colour"), "\($0)")
        }
        XCTAssertThrowsError(try call("Resume", "s \(id)")) { XCTAssertTrue("\($0)".contains("is completed"), "\($0)") }
        XCTAssertThrowsError(try call("Limit", "ss \(id) 500k")) { XCTAssertTrue("\($0)".contains("only an unfinished job is capped"), "\($0)") }
        XCTAssertThrowsError(try call("Limit", "ss \(id) fast")) { XCTAssertTrue("\($0)".contains("rate must be bytes per second"), "\($0)") }
        let refreshed = try call("Refresh", "s \(id)")
        XCTAssertTrue(refreshed.contains(#""Id" s "\#(id)""#), refreshed)
        try lab.waitFor(id, "checked") { $0.state == .completed && $0.download?.lastChecked != nil && $0.reason == nil && $0.download?.nextCheck == nil }
    }

    func testAddTakesConstraints() throws {
        try lab.serve("c.bin", bytes: 1000)
        let added = try call("Add", "'ssa{sv}' \(lab.url("c.bin")) \(lab.out)/c.bin 3 NotBefore s 2099-01-01T00:00:00Z "
            + "Network s not-roaming,within-budget StorageNotLow b true")
        XCTAssertTrue(added.contains(#""Constraints" s "network=not-roaming,within-budget not-before=2099-01-01T00:00:00.000000Z storage-not-low""#), added)
        let id = try id(in: added)
        let waiting = try lab.waitFor(id, "waiting until 2099") { $0.state == .deferred && ($0.reason ?? "").hasPrefix("waiting until 2099-01-01 ") }
        XCTAssertEqual(waiting.constraints.network, [.notRoaming, .withinBudget])
        XCTAssertTrue(try call("Show", "s \(id)").contains("waiting until 2099-01-01 "))
        XCTAssertThrowsError(try call("Add", "'ssa{sv}' \(lab.url("c.bin")) \(lab.out)/d.bin 1 Window s 25:00-06:00")) {
            XCTAssertTrue("\($0)".contains("Window: \"window\" must be HH:MM-HH:MM"), "\($0)")
        }
        XCTAssertThrowsError(try call("Add", "'ssa{sv}' \(lab.url("c.bin")) \(lab.out)/d.bin 1 Now s yes")) {
            XCTAssertTrue("\($0)".contains("Now"), "\($0)")
        }
    }

    func testCallsActAsTheCaller() throws {
        try lab.serve("u.bin", bytes: 1000)
        // Where the instance's user may not write: refused with the kernel's reason, even for root.
        let rootOnly = lab.out + "/root-only"
        try FileManager.default.createDirectory(atPath: rootOnly, withIntermediateDirectories: true)
        XCTAssertThrowsError(try call("Add", "'ssa{sv}' \(lab.url("u.bin")) \(rootOnly)/x 0")) {
            XCTAssertTrue("\($0)".contains("cannot create \(rootOnly)/.x.") && "\($0)".contains("Permission denied"), "\($0)")
        }
        let added = try call("Add", "'ssa{sv}' \(lab.url("u.bin")) \(lab.out)/y 1 AllowMetered b true")
        XCTAssertTrue(added.contains(#""Uid" u 0"#), added)
        try lab.waitFor(try id(in: added), "completed") { $0.state == .completed }
        // A member of the instance's group is let through by the bus policy and served as themselves.
        let member = try lab.makeUser("m")
        try lab.lab.run("usermod -aG \(lab.daemonUser.name) \(member.name)")
        XCTAssertEqual(try call("List", user: member.name), "aa{sv} 0\n")
        // Anyone else: the bus policy lets only root and the group reachd-transfers call.
        XCTAssertThrowsError(try call("List", user: "nobody")) { XCTAssertTrue("\($0)".contains("denied"), "\($0)") }
    }

    func testIntrospectionMatchesTheInterfaceFile() throws {
        let exported = try lab.lab.run("busctl --address=\(bus!.address) introspect --xml-interface org.reachd.Transfers1 /org/reachd/Transfers1")
        let file = try String(contentsOfFile: PrivateBus.dbusDirectory + "/org.reachd.Transfers1.xml", encoding: .utf8)
        XCTAssertFalse(PrivateBus.interface("org.reachd.Transfers1", in: file).isEmpty)
        XCTAssertEqual(PrivateBus.interface("org.reachd.Transfers1", in: exported), PrivateBus.interface("org.reachd.Transfers1", in: file))
    }
}
