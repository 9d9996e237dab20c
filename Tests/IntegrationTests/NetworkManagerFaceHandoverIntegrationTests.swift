import Foundation
import ReachdModel
import XCTest

/// reachd's NetworkManager face and Debian's real NetworkManager on one private system bus: NetworkManager
/// cannot take a name the face holds, gets it once the face stepped back (as the ExecStartPre= of the installed
/// drop-in asks), reachd reads NetworkManager's flags again, and the face comes back when NetworkManager quits.
final class NetworkManagerFaceHandoverIntegrationTests: XCTestCase {
    private static let dropIn = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../systemd/NetworkManager.service.d/reachd-networkmanager-face.conf").standardized.path
    private var lab: NetLab!
    private var manager: RealNetworkManager?

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addLink("eth0")
        try lab.peerIP("addr add 192.0.2.1/24 dev eth0")
        manager = try RealNetworkManager(lab: lab)
        try manager!.addProfile("wired", interface: "eth0", metered: .yes, ipv4: .manual(address: "192.0.2.2/24", gateway: "192.0.2.1"))
        try lab.startDaemon(arguments: ["--networkmanager", "system", "--networkmanager-face", "system"], environment: manager!.environment)
        try eventually("the face on the bus") { version().contains("-reachd") }
    }

    override func tearDown() {
        lab?.stopDaemon()
        manager?.stop()
        lab?.tearDown()
    }

    private func version() -> String {
        (try? manager!.busctl(["get-property", RealNetworkManager.service, "/org/freedesktop/NetworkManager", RealNetworkManager.service, "Version"])) ?? ""
    }

    /// What `systemctl start NetworkManager` does with the drop-in: its ExecStartPre=, then NetworkManager, which
    /// takes its own name.
    private func stepBackAndStart(_ manager: RealNetworkManager) throws {
        _ = try runExecStartPre()
        try manager.start()
        try eventually("NetworkManager's own name", detail: manager.log) { version().contains("1.42") && !version().contains("-reachd") }
    }

    /// The drop-in's ExecStartPre= command, run as systemd would run it (through /bin/sh), on the private bus.
    private func runExecStartPre() throws -> String {
        let text = try String(contentsOfFile: Self.dropIn, encoding: .utf8)
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("ExecStartPre=-/bin/sh -c '") })
        let command = String(line.dropFirst("ExecStartPre=-/bin/sh -c '".count).dropLast())
        return try lab.run("DBUS_SYSTEM_BUS_ADDRESS=\(manager!.busAddress) \(command)")
    }

    func testNetworkManagerCannotTakeTheNameWithoutTheStepBack() throws {
        let manager = try XCTUnwrap(manager)
        // start() returns as soon as the name has an owner (the face here): NetworkManager's log tells.
        try? manager.start()
        try eventually("NetworkManager to give up", detail: manager.log) { manager.log.contains("Service already taken") }
        XCTAssertTrue(version().contains("-reachd"), "the face still answers")
    }

    func testOnlyRootMayAskTheFaceToStepBack() throws {
        let refused = try lab.run("DBUS_SYSTEM_BUS_ADDRESS=\(manager!.busAddress) setpriv --reuid=65534 --regid=65534 --clear-groups "
            + "dbus-send --system --print-reply --dest=org.freedesktop.NetworkManager /org/reachd/NetworkManagerFace1 "
            + "org.reachd.NetworkManagerFace1.StepBack || true")
        XCTAssertTrue(refused.contains("org.freedesktop.DBus.Error.AccessDenied: only root may ask"), refused)
        XCTAssertTrue(version().contains("-reachd"), "the face still answers")
    }

    func testTheFaceStepsBackForNetworkManagerAndComesBack() throws {
        let manager = try XCTUnwrap(manager)
        let start = Date()
        try stepBackAndStart(manager)
        let handOver = Date().timeIntervalSince(start)
        print("hand-over: \(String(format: "%.3f", handOver)) s from ExecStartPre= to NetworkManager answering on its name")
        XCTAssertEqual(try manager.waitForActivation("eth0"), ManagerMetered.yes.rawValue)
        try eventually("reachd to read NetworkManager's flags", detail: lab.log) { lab.log.contains("NetworkManager metered flags") && lab.log.contains("eth0=yes") }
        XCTAssertFalse(manager.log.contains("<error>"), manager.log)
        XCTAssertFalse(lab.log.contains(" error "), lab.log)

        let real = try situation()

        manager.stopManager()
        try eventually("the face back on the name once NetworkManager quit") { version().contains("-reachd") }
        // NetworkManager leaves eth0 configured: the same situation, as the face reports it.
        XCTAssertEqual(try situation(), real, "the face reports what NetworkManager reported")
    }

    /// NetworkManager started, stopped and started again, the second start failing: each ExecStartPre= owns the
    /// face's wait, so the face takes the name back 30 s after the second step-back, not 30 s after the first.
    func testASecondStepBackReplacesTheFirstsWait() throws {
        let manager = try XCTUnwrap(manager)
        let first = Date()
        try stepBackAndStart(manager)
        manager.stopManager()
        try eventually("the face back on the name once NetworkManager quit") { version().contains("-reachd") }
        // A gap of 5 s between the two step-backs, so that the first one's wait, had it survived, would end well
        // before the second's: nothing is awaited here, the time itself is the point.
        let gap = 5 - Date().timeIntervalSince(first)
        if gap > 0 { usleep(UInt32(gap * 1_000_000)) }
        let second = Date()
        _ = try runExecStartPre()
        try eventually("the face to take the name again", timeout: 90, detail: lab.log) { version().contains("-reachd") }
        let back = Date().timeIntervalSince(second)
        print("the face took the name back \(String(format: "%.1f", back)) s after the second step-back")
        XCTAssertGreaterThanOrEqual(back, Double(30), "the first step-back's wait took the name back")
        XCTAssertEqual(lab.log.components(separatedBy: "nobody took org.freedesktop.NetworkManager").count - 1, 1, lab.log)
    }

    /// What the manager and eth0's device report that the face maps. Not Metered: NetworkManager's comes from the
    /// profile, the face's from reachd's own sources once NetworkManager is gone. Not DeviceType: the lab's eth0 is
    /// a veth, which NetworkManager reports as such (20), and the face by reachd's kind of it (wired: 1).
    private func situation() throws -> [String] {
        let manager = try XCTUnwrap(manager), path = "/org/freedesktop/NetworkManager"
        let device = try manager.device("eth0")
        return try ["State", "Connectivity", "PrimaryConnectionType", "NetworkingEnabled", "Startup"].map {
            try manager.busctl(["get-property", RealNetworkManager.service, path, RealNetworkManager.service, $0])
        } + ["State", "Ip4Connectivity"].map {
            try manager.busctl(["get-property", RealNetworkManager.service, device, RealNetworkManager.deviceInterface, $0])
        } + [try manager.busctl(["get-property", RealNetworkManager.service,
                                 Self.path(try manager.busctl(["get-property", RealNetworkManager.service, path, RealNetworkManager.service, "PrimaryConnection"])),
                                 "org.freedesktop.NetworkManager.Connection.Active", "Type"])]
    }

    private static func path(_ answer: String) -> String {
        answer.split(separator: "\"").dropFirst().first.map(String.init) ?? ""
    }
}
