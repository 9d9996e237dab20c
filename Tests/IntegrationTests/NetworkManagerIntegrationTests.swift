import Foundation
import ReachdModel
import XCTest

/// NetworkManager as a metered source: reachd reads the `Metered` flag of the device carrying each link
/// from a stand-in NetworkManager (reachd-fake-networkmanager) on a private bus and follows its changes;
/// the configuration still wins.
final class NetworkManagerIntegrationTests: XCTestCase {
    private var lab: NetLab!
    private var bus: PrivateBus?
    private var manager: (process: Process, input: FileHandle, output: LineReader)?

    override func setUpWithError() throws {
        lab = try NetLab.make()
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        bus = try PrivateBus(directory: lab.directory, policies: [])
    }

    override func tearDown() {
        if let manager {
            try? manager.input.close()
            manager.process.waitUntilExit()
        }
        lab?.tearDown()
        bus?.stop()
    }

    private func startManager(_ devices: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: NetLab.binary("reachd-fake-networkmanager"))
        process.arguments = devices
        process.environment = ["DBUS_SESSION_BUS_ADDRESS": bus!.address]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let reader = LineReader(output.fileHandleForReading)
        XCTAssertEqual(try reader.next(), "ready")
        manager = (process, input.fileHandleForWriting, reader)
    }

    private func set(_ interface: String, _ value: ManagerMetered) throws {
        try XCTUnwrap(manager).input.write(Data("set \(interface) \(value.rawValue)\n".utf8))
        XCTAssertEqual(try manager?.output.next(), "ok")
    }

    private func startDaemon(config: String? = nil) throws {
        try lab.startDaemon(config: config, arguments: ["--networkmanager", "session"], environment: ["DBUS_SESSION_BUS_ADDRESS": bus!.address])
    }

    func testMeteredFlagIsReadAndFollowed() throws {
        try startManager(["eth0=\(ManagerMetered.yes.rawValue)"])
        try startDaemon()
        let subscriber = try lab.subscribe()
        var verdict = try subscriber.waitFor("metered by NetworkManager") { $0.metered }.verdict
        XCTAssertEqual(verdict.status, .wired)
        XCTAssertEqual(verdict.meteredReason, "NetworkManager: yes")
        XCTAssertEqual(try lab.reachctl(["status"]).out, "reachable via wired (eth0), metered (NetworkManager: yes)\n")

        try set("eth0", .guessYes)
        verdict = try subscriber.waitFor("guess-yes") { $0.meteredReason == "NetworkManager: guess-yes" }.verdict
        XCTAssertTrue(verdict.metered)
        try set("eth0", .no)
        verdict = try subscriber.waitFor("unmetered") { !$0.metered }.verdict
        XCTAssertNil(verdict.meteredReason)
        try set("eth0", .unknown)
        XCTAssertEqual(try subscriber.drain(for: 0.5).count, 0, "unknown leaves the kind's default (wired: unmetered): no change")
    }

    func testNetworkManagerAppearingLaterIsPickedUp() throws {
        try startDaemon()
        let subscriber = try lab.subscribe()
        XCTAssertFalse(subscriber.latest.verdict.metered)
        try startManager(["eth0=\(ManagerMetered.guessYes.rawValue)"])
        let verdict = try subscriber.waitFor("metered once NetworkManager is there") { $0.metered }.verdict
        XCTAssertEqual(verdict.meteredReason, "NetworkManager: guess-yes")
    }

    func testConfigurationWins() throws {
        try startManager(["eth0=\(ManagerMetered.yes.rawValue)"])
        try startDaemon(config: "[[interface]]\nmatch = \"eth0\"\nmetered = false\n")
        let subscriber = try lab.subscribe()
        XCTAssertEqual(try subscriber.drain(for: 1).filter { $0.verdict.metered }.count, 0)
        XCTAssertFalse(subscriber.latest.verdict.metered)
        XCTAssertTrue(lab.log.contains("NetworkManager metered flags"), "the flag was read, and overridden")
    }
}
