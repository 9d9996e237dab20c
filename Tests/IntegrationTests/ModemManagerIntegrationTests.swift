import Foundation
import ReachdModel
import XCTest

/// Roaming from ModemManager (issue 33), against python-dbusmock's ModemManager (ModemManagerMock) on a private
/// system bus: the default route leaves on `wwan0`, a veth link in the lab, whose modem's bearer names it. The
/// modem goes home → roaming → home → roaming (another roaming state), ModemManager leaves the bus and comes
/// back; the socket's verdict, `reachctl wait --not-roaming`, the D-Bus properties and GLib follow.
final class ModemManagerIntegrationTests: XCTestCase {
    private var lab: NetLab!
    private var modemManager: ModemManagerMock?

    override func setUpWithError() throws {
        lab = try NetLab.make()
        modemManager = try ModemManagerMock(lab: lab)
        try lab.addUplink("wwan0", "10.78.0", metric: 100)
    }

    override func tearDown() {
        lab?.stopDaemon()
        modemManager?.tearDown()
        lab?.tearDown()
    }

    /// `reachctl wait --not-roaming` with `timeout` seconds, on the lab's socket.
    private func waitNotRoaming(timeout: Int) throws -> (status: Int32, out: String, err: String) {
        try lab.reachctl(["wait", "--not-roaming", "--timeout", "\(timeout)"])
    }

    func testRoamingFollowsModemManager() throws {
        let modemManager = try XCTUnwrap(modemManager)
        try modemManager.start()
        try modemManager.addModem(bearerInterface: "wwan0", registration: ModemRegistration.home.rawValue)
        // reachd reads "ModemManager" on the private bus (--networkmanager system) and serves its own D-Bus face there.
        try lab.startDaemon(arguments: ["--networkmanager", "system", "--bus", "system"], environment: modemManager.environment)
        let subscriber = try lab.subscribe()
        let home = try subscriber.waitFor("reachable via wwan0") { $0.reachable && $0.interface == "wwan0" }.verdict
        XCTAssertFalse(home.roaming, "registered at home")
        XCTAssertEqual(home.cost, ConnectionCost(level: .fixed), "wwan is metered by its kind")
        XCTAssertEqual(try waitNotRoaming(timeout: 30).status, 0)

        try modemManager.setRegistration(ModemRegistration.roaming.rawValue)
        let roaming = try subscriber.waitFor("roaming from ModemManager") { $0.roaming }.verdict
        XCTAssertEqual(roaming.roamingSource, .modemManager)
        XCTAssertEqual(roaming.cost, ConnectionCost(level: .variable, roaming: true))
        XCTAssertEqual(roaming.summary, "reachable via WWAN (wwan0), metered (interface kind wwan), roaming (ModemManager)")
        XCTAssertTrue(lab.log.contains("ModemManager roaming links"), lab.log)
        let status = try lab.reachctl(["status"])
        XCTAssertEqual(status.out, "reachable via WWAN (wwan0), metered (interface kind wwan), roaming (ModemManager)\n")
        let json = try lab.reachctl(["--json", "status"]).out
        XCTAssertTrue(json.contains(#""cost":{"approachingDataLimit":false,"level":"variable","overDataLimit":false,"roaming":true}"#), json)
        XCTAssertTrue(json.contains(#""roaming":true,"roamingSource":"ModemManager""#), json)
        try modemManager.bus.waitForOwner(of: "org.reachd.Reachability1")
        let property = { (name: String) in
            try modemManager.busctl(["get-property", "org.reachd.Reachability1", "/org/reachd/Reachability1", "org.reachd.Reachability1", name])
        }
        try eventually("the D-Bus properties to say roaming") { try property("Roaming") == "b true\n" }
        XCTAssertEqual(try property("RoamingSource"), "s \"ModemManager\"\n")
        XCTAssertEqual(try property("Cost"), "s \"variable\"\n")
        XCTAssertEqual(try property("CostFlags"), "as 1 \"roaming\"\n")
        // Roaming: the condition does not hold within the timeout (exit 1, saying why).
        let timedOut = try waitNotRoaming(timeout: 2)
        XCTAssertEqual(timedOut.status, 1, timedOut.err)
        XCTAssertTrue(timedOut.err.contains("roaming (ModemManager)"), timedOut.err)

        // Home again while `reachctl wait --not-roaming` waits: it returns.
        let waiting = Process()
        waiting.executableURL = URL(fileURLWithPath: NetLab.binary("reachctl"))
        waiting.arguments = ["wait", "--not-roaming", "--timeout", "60", "--socket", lab.socketPath]
        waiting.standardOutput = FileHandle.nullDevice
        try waiting.run()
        try modemManager.setRegistration(ModemRegistration.home.rawValue)
        let back = try subscriber.waitFor("home again") { !$0.roaming }.verdict
        XCTAssertEqual(back.cost, ConnectionCost(level: .fixed))
        waiting.waitUntilExit()
        XCTAssertEqual(waiting.terminationStatus, 0)
        try eventually("the D-Bus properties to say home") { try property("Roaming") == "b false\n" }
        XCTAssertEqual(try property("Cost"), "s \"fixed\"\n")

        // Another roaming state, then ModemManager leaves the bus: no modem roams any more.
        try modemManager.setRegistration(ModemRegistration.roamingCSFBNotPreferred.rawValue)
        try subscriber.waitFor("roaming (csfb-not-preferred)") { $0.roaming }
        modemManager.stop()
        let gone = try subscriber.waitFor("not roaming once ModemManager is gone") { !$0.roaming }.verdict
        XCTAssertTrue(gone.reachable)
        XCTAssertEqual(gone.cost, ConnectionCost(level: .fixed))
        XCTAssertEqual(try waitNotRoaming(timeout: 30).status, 0)

        // ModemManager back on the bus with the modem roaming: followed again.
        try modemManager.start()
        try modemManager.addModem(bearerInterface: "wwan0", registration: ModemRegistration.roamingSMSOnly.rawValue)
        XCTAssertEqual(try subscriber.waitFor("roaming once ModemManager is back") { $0.roaming }.verdict.roamingSource, .modemManager)
    }

    /// A roaming modem whose bearer is another link: the path's link does not roam.
    func testAnotherLinksModemDoesNotRoamThePath() throws {
        let modemManager = try XCTUnwrap(modemManager)
        try modemManager.start()
        try modemManager.addModem(bearerInterface: "wwan9", registration: ModemRegistration.roaming.rawValue)
        try lab.startDaemon(arguments: ["--networkmanager", "system"], environment: modemManager.environment)
        try eventually("reachd to read the roaming modem") { self.lab.log.contains("ModemManager roaming links") }
        XCTAssertTrue(lab.log.contains("[\"wwan9\"]"), lab.log)
        let verdict = try lab.subscribe().waitFor("reachable via wwan0") { $0.reachable && $0.interface == "wwan0" }.verdict
        XCTAssertFalse(verdict.roaming)
        XCTAssertEqual(try waitNotRoaming(timeout: 30).status, 0)
    }

    /// GLib's one word for cost (the GIO module): an unmetered wired link (a modem that shows as Ethernet,
    /// cdc_ether) that roams is metered for GLib apps, and not once the modem is home again.
    func testGLibCountsARoamingPathAsMetered() throws {
        let module = GIOModuleIntegrationTests.moduleDirectory
        guard FileManager.default.fileExists(atPath: module + "/libgioreachd.so") else {
            XCTFail("the GIO module is not built: run `make gio-module` (make test does)")
            return
        }
        let modemManager = try XCTUnwrap(modemManager)
        try lab.addUplink("eth1", "10.79.0", metric: 50)
        try modemManager.start()
        try modemManager.addModem(bearerInterface: "eth1", registration: ModemRegistration.home.rawValue)
        try lab.startDaemon(arguments: ["--networkmanager", "system", "--bus", "system"], environment: modemManager.environment)
        try modemManager.bus.waitForOwner(of: "org.reachd.Reachability1")
        let app = try GLibProbe(namespace: lab.host, environment: [
            "GIO_EXTRA_MODULES": module, "DBUS_SYSTEM_BUS_ADDRESS": modemManager.bus.address, "G_DEBUG": "fatal-warnings",
        ])
        defer { app.stop() }
        XCTAssertEqual(app.answers(app.ready), Answers(available: true, metered: false, connectivity: "full"))
        try modemManager.setRegistration(ModemRegistration.roamingSMSOnly.rawValue)
        XCTAssertEqual(app.answers(try app.next("changed", what: "roaming")), Answers(available: true, metered: true, connectivity: "full"))
        try modemManager.setRegistration(ModemRegistration.home.rawValue)
        XCTAssertEqual(app.answers(try app.next("changed", what: "home")), Answers(available: true, metered: false, connectivity: "full"))
    }
}
