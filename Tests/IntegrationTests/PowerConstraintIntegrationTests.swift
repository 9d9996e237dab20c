import Foundation
import ReachdTransferModel
import XCTest

/// Jobs' power constraints against UPower and power-profiles-daemon as python-dbusmock's templates serve them
/// (Debian's python3-dbusmock: the real services' names, paths and interfaces) on a private bus that
/// reachd-transfers takes for the system bus, never the host's: a job waits with its reason on battery and in
/// power-saver, a running one pauses when the host goes on battery and goes on from its partial file on AC.
final class PowerConstraintIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    private var bus: PrivateBus?
    private var mocks: [Process] = []
    private static let upower = "org.freedesktop.UPower"
    private static let profiles = "net.hadess.PowerProfiles"
    private static let display = "/org/freedesktop/UPower/devices/DisplayDevice"

    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/dbusmock/templates/power_profiles_daemon.py"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-send") else {
            throw XCTSkip("python3-dbusmock (Debian) and dbus-send are needed")
        }
        lab = try TransferLab()
        bus = try PrivateBus(directory: lab.lab.directory, policies: [])
        try lab.startTestServer()
    }

    override func tearDown() {
        lab?.tearDown()
        for mock in mocks where mock.isRunning {
            mock.terminate()
            mock.waitUntilExit()
        }
        bus?.stop()
    }

    /// Starts a dbusmock `template` with `parameters` (JSON) on the private bus and waits for its `name`.
    private func mock(_ template: String, _ parameters: String, name: String) throws {
        mocks.append(try bus!.startMock(template, parameters: parameters, name: name, log: lab.lab.directory + "/\(template).log"))
    }

    /// Sets a property of a mocked service (dbusmock emits its PropertiesChanged).
    private func set(_ name: String, _ path: String, _ interface: String, _ property: String, _ value: String) throws {
        _ = try lab.lab.run("dbus-send --bus=\(bus!.address) --print-reply --dest=\(name) \(path) org.freedesktop.DBus.Properties.Set "
            + "string:\(interface) string:\(property) variant:\(value)")
    }

    /// Starts reachd-transfers on the private bus and waits until it has logged the power it read (`facts`, the
    /// log's `key=value` words), so that a job added next is decided with them.
    private func startDaemon(expecting facts: [String]) throws {
        try lab.startDaemon(arguments: ["--power", "system"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus!.address])
        try eventually("the power read", detail: String(lab.log.suffix(2000))) {
            lab.log.split(separator: "\n").contains { line in line.hasSuffix(" power") && facts.allSatisfy { line.contains($0) } }
        }
    }

    func testAJobWaitsOnBatteryThenInPowerSaverAndCompletesOnACInBalanced() throws {
        try mock("upower", #"{"OnBattery": true}"#, name: Self.upower)
        try set(Self.upower, Self.display, Self.upower + ".Device", "Percentage", "double:35")
        try set(Self.upower, Self.display, Self.upower + ".Device", "IsPresent", "boolean:true")
        try mock("power_profiles_daemon", #"{"ActiveProfile": "power-saver"}"#, name: Self.profiles)
        try startDaemon(expecting: ["onBattery=true", "percentage=35", "profile=power-saver"])
        let sum = try lab.serve("p.bin", bytes: 3 << 20)
        let id = try lab.add(lab.url("p.bin"), output: lab.out + "/p.bin", ["--power", "on-ac-power,not-power-saver", "--sha256", sum])

        let onBattery = try lab.waitFor(id, "waiting on battery") { $0.state == .deferred && $0.reason == "waiting: on battery, 35 %" }
        XCTAssertEqual(onBattery.bytesMoved, 0)
        XCTAssertEqual(onBattery.constraints.power, [.onACPower, .notPowerSaver])
        let listed = try lab.download(["list"])
        XCTAssertTrue(listed.out.contains("(waiting: on battery, 35 %)  {power=not-power-saver,on-ac-power}"), listed.out)
        XCTAssertTrue(lab.gets("p.bin").isEmpty, "nothing asked of the server while it waits")

        try set(Self.upower, "/org/freedesktop/UPower", Self.upower, "OnBattery", "boolean:false")
        try lab.waitFor(id, "waiting in power-saver") { $0.state == .deferred && $0.reason == "waiting: power profile is power-saver" }

        try set(Self.profiles, "/net/hadess/PowerProfiles", Self.profiles, "ActiveProfile", "string:balanced")
        let done = try lab.waitFor(id, "completed in balanced on AC") { $0.state == .completed }
        XCTAssertEqual(done.bytesMoved, 3 << 20)
        XCTAssertEqual(try lab.sha256(lab.out + "/p.bin"), sum)
    }

    /// `battery-not-low` on battery: the job waits while the battery holds under 15 %, still while UPower warns
    /// (WarningLevel low) at 40 %, and completes, still on battery, once UPower no longer warns.
    func testBatteryNotLowWaitsWhileTheBatteryIsLowAndCompletesOnceItIsNot() throws {
        try mock("upower", #"{"OnBattery": true}"#, name: Self.upower)
        try set(Self.upower, Self.display, Self.upower + ".Device", "Percentage", "double:10")
        try set(Self.upower, Self.display, Self.upower + ".Device", "IsPresent", "boolean:true")
        try startDaemon(expecting: ["onBattery=true", "percentage=10"])
        let sum = try lab.serve("b.bin", bytes: 300_000)
        let id = try lab.add(lab.url("b.bin"), output: lab.out + "/b.bin", ["--power", "battery-not-low"])

        let low = try lab.waitFor(id, "waiting with the battery low") { $0.state == .deferred && ($0.reason ?? "").contains("battery") }
        XCTAssertEqual(low.reason, "waiting: battery low, 10 %")
        print("\(name) wait reason: \(low.reason ?? "")")
        for arguments in [["list"], ["show", id]] {
            let listed = try lab.download(arguments)
            XCTAssertTrue(listed.out.contains("(waiting: battery low, 10 %)  {power=battery-not-low}"), "\(arguments): \(listed.out)")
        }
        XCTAssertTrue(lab.gets("b.bin").isEmpty, "nothing asked of the server while it waits")

        try set(Self.upower, Self.display, Self.upower + ".Device", "WarningLevel", "uint32:3")
        try set(Self.upower, Self.display, Self.upower + ".Device", "Percentage", "double:40")
        let warned = try lab.waitFor(id, "waiting while UPower warns") { $0.reason == "waiting: battery low, 40 %" }
        print("\(name) wait reason: \(warned.reason ?? "")")
        XCTAssertEqual(warned.state, .deferred)

        try set(Self.upower, Self.display, Self.upower + ".Device", "WarningLevel", "uint32:1")
        let done = try lab.waitFor(id, "completed on a battery that is not low") { $0.state == .completed }
        XCTAssertEqual(done.bytesMoved, 300_000)
        XCTAssertEqual(try lab.sha256(lab.out + "/b.bin"), sum)
    }

    func testARunningJobPausesOnBatteryAndGoesOnFromItsPartialFileOnAC() throws {
        try mock("upower", #"{"OnBattery": false}"#, name: Self.upower)
        try startDaemon(expecting: ["onBattery=false"])
        let sum = try lab.serve("r.bin", bytes: 12 << 20)
        let id = try lab.add(lab.url("r.bin?rate=4000000"), output: lab.out + "/r.bin", ["--power", "on-ac-power", "--sha256", sum])
        try lab.waitFor(id, "running with 2 MB on disk") { $0.state == .running && $0.bytesMoved > 2_000_000 }

        try set(Self.upower, "/org/freedesktop/UPower", Self.upower, "OnBattery", "boolean:true")
        // No battery on the display device: the reason has no share.
        let paused = try lab.waitFor(id, "paused on battery") { $0.state == .deferred && $0.reason == "waiting: on battery" }
        XCTAssertLessThan(paused.bytesMoved, 12 << 20)

        try set(Self.upower, "/org/freedesktop/UPower", Self.upower, "OnBattery", "boolean:false")
        let done = try lab.waitFor(id, "completed on AC") { $0.state == .completed }
        XCTAssertEqual(done.bytesMoved, 12 << 20)
        XCTAssertEqual(try lab.sha256(lab.out + "/r.bin"), sum)
        let requests = lab.gets("r.bin", atLeast: 2)
        XCTAssertEqual(requests.count, 2, "\(requests)")
        XCTAssertEqual(requests.last?["status"] as? Int, 206, "the second request goes on from the partial file")
    }
}
