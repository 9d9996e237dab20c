import Foundation
import XCTest

/// `reachd --networkmanager-face auto` (what the installed unit passes) on a private system bus, never the
/// host's: reachd asks systemd (here Tests/Support/fake_systemd.py, answering GetUnitFileState as systemd does)
/// whether NetworkManager.service is enabled, and serves the face only where it is not installed, disabled or
/// masked. The same under real systemd, with and without the real NetworkManager: systemtest/networkmanager-face.sh.
final class NetworkManagerFaceAutoIntegrationTests: XCTestCase {
    private static let face = "org.freedesktop.NetworkManager"
    private static let fakeSystemd = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Support/fake_systemd.py").standardized.path
    private var lab: NetLab!
    private var bus: PrivateBus?
    private var systemd: Process?

    override func setUpWithError() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-send") else { throw XCTSkip("dbus-send is not installed") }
        lab = try NetLab.make()
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        bus = try PrivateBus(directory: lab.directory, policies: ["reachd-networkmanager-face.conf"])
    }

    override func tearDown() {
        lab?.tearDown()
        systemd?.terminate()
        systemd?.waitUntilExit()
        bus?.stop()
    }

    /// Starts the fake systemd saying `state` of NetworkManager.service ("not-found": it knows no such unit).
    private func systemdSays(_ state: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.fakeSystemd, bus!.address, state]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        systemd = process
        try bus!.waitForOwner(of: "org.freedesktop.systemd1")
    }

    /// Starts reachd with `auto` on the private system bus and waits for its decision, the log line it returns.
    private func startAuto() throws -> String {
        try lab.startDaemon(arguments: ["--networkmanager-face", "auto"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus!.address])
        var decision = ""
        try eventually("reachd's decision", detail: lab.log) {
            decision = lab.log.split(separator: "\n").last { $0.contains("(--networkmanager-face auto)") }.map(String.init) ?? ""
            return !decision.isEmpty
        }
        return decision
    }

    private func faceHasOwner() throws -> Bool {
        let reply = try lab.run("dbus-send --bus=\(bus!.address) --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus "
            + "org.freedesktop.DBus.NameHasOwner string:\(Self.face)")
        return reply.contains("boolean true")
    }

    private func assertServes(_ decision: String, _ what: String) throws {
        XCTAssertTrue(decision.contains("NetworkManager.service is \(what): the NetworkManager face is on"), decision)
        try bus!.waitForOwner(of: Self.face)
        let version = try lab.run("dbus-send --bus=\(bus!.address) --print-reply --dest=\(Self.face) /org/freedesktop/NetworkManager "
            + "org.freedesktop.DBus.Properties.Get string:\(Self.face) string:Version")
        XCTAssertTrue(version.contains("-reachd-"), version)
    }

    func testServesWhereNetworkManagerIsNotInstalled() throws {
        try systemdSays("not-found")
        try assertServes(try startAuto(), "not installed")
    }

    func testServesWhereNetworkManagerIsDisabled() throws {
        try systemdSays("disabled")
        try assertServes(try startAuto(), "disabled")
    }

    func testServesWhereNetworkManagerIsMasked() throws {
        try systemdSays("masked")
        try assertServes(try startAuto(), "masked")
    }

    /// Off: the decision is logged before the face would ask for its name, so no owner after it means none at all.
    func testOffWhereNetworkManagerIsEnabled() throws {
        try systemdSays("enabled")
        let decision = try startAuto()
        XCTAssertTrue(decision.contains("NetworkManager.service is enabled: the NetworkManager face is off"), decision)
        XCTAssertFalse(try faceHasOwner())
    }

    func testOffWhereSystemdDoesNotAnswer() throws {
        let decision = try startAuto()
        XCTAssertTrue(decision.contains("systemd could not say whether NetworkManager.service is enabled"), decision)
        XCTAssertTrue(decision.contains("the NetworkManager face is off"), decision)
        XCTAssertFalse(try faceHasOwner())
    }
}
