import Foundation
import ReachdModel
import ReachdProtocol
import ReachdTransferModel
import ReachdTransferProtocol
import XCTest

/// Jobs' network constraints end to end (issue 33): each job waits with its reason, shown by `reachctl download
/// list` and `show`, until the fact changes, then completes with the server's bytes. `not-roaming` with python-dbusmock's
/// ModemManager on a private system bus, through reachd's verdicts (reachd-transfers' default source when reachd
/// answers) and through its own; `unmetered` and `any` against its own netlink verdicts (wwan0 metered, eth0 not).
final class NetworkConstraintIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    private var modemManager: ModemManagerMock?

    override func tearDown() {
        lab?.stopDaemon()
        _ = lab?.lab.stopDaemon()
        modemManager?.tearDown()
        lab?.tearDown()
        lab = nil
    }

    /// Asserts that `reachctl download list` and `show` give job `id`'s reason `reason`, and prints it for the log.
    private func assertListed(_ id: String, reason: String, file: StaticString = #filePath, line: UInt = #line) throws {
        print("\(name) wait reason: \(reason)")
        for arguments in [["list"], ["show", id]] {
            let listed = try lab.download(arguments)
            XCTAssertEqual(listed.status, 0, listed.err, file: file, line: line)
            XCTAssertTrue(listed.out.contains("\(id)  deferred  ") && listed.out.contains("  (\(reason))"),
                          "\(arguments): \(listed.out)", file: file, line: line)
        }
    }

    func testNotRoamingWaitsWhileReachdSaysItsLinkRoamsAndCompletesAtHome() throws {
        try notRoaming(throughReachd: true)
    }

    /// The same with reachd-transfers' own verdicts (`--verdicts netlink`), which read ModemManager on its `--networkmanager` bus.
    func testNotRoamingWithNetlinkVerdictsReadsModemManagerItself() throws {
        try notRoaming(throughReachd: false)
    }

    /// wwan0 is the only uplink, its modem roaming: a `not-roaming` job waits, and completes once the modem is home.
    private func notRoaming(throughReachd: Bool) throws {
        lab = try TransferLab(eth0: false)
        let modemManager = try ModemManagerMock(lab: lab.lab)
        self.modemManager = modemManager
        try lab.startTestServer()
        try modemManager.start()
        try modemManager.addModem(bearerInterface: "wwan0", registration: ModemRegistration.roaming.rawValue)
        // The daemons read the private bus as the system bus, and ModemManager there (--networkmanager system).
        let readsModems = { (log: String) in log.contains("ModemManager roaming links") && log.contains("[\"wwan0\"]") }
        if throughReachd {
            try lab.lab.startDaemon(arguments: ["--networkmanager", "system"], environment: modemManager.environment)
            try eventually("reachd to read the roaming modem on wwan0", detail: String(lab.lab.log.suffix(2000))) { readsModems(self.lab.lab.log) }
            try lab.startDaemon(arguments: ["--verdicts", "reachd", "--reachd-socket", lab.lab.socketPath, "--networkmanager", "system"],
                                environment: modemManager.environment)
        } else {
            try lab.startDaemon(arguments: ["--networkmanager", "system"], environment: modemManager.environment)
            try eventually("reachd-transfers to read the roaming modem on wwan0", detail: String(lab.log.suffix(2000))) { readsModems(self.lab.log) }
        }
        let sum = try lab.serve("r.bin", bytes: 300_000)
        let id = try lab.add(lab.url("r.bin"), output: lab.out + "/r.bin", ["--network", "not-roaming"])

        let waiting = try lab.waitFor(id, "waiting while roaming") { $0.state == .deferred && ($0.reason ?? "").contains("roaming") }
        XCTAssertEqual(waiting.reason, "waiting: roaming on wwan0 (ModemManager)")
        XCTAssertEqual(waiting.constraints.network, [.notRoaming])
        try assertListed(id, reason: waiting.reason ?? "")
        XCTAssertTrue(lab.gets("r.bin").isEmpty, "nothing asked of the server while it waits")

        try modemManager.setRegistration(ModemRegistration.home.rawValue)
        let done = try lab.waitFor(id, "completed at home") { $0.state == .completed }
        XCTAssertEqual(done.bytesMoved, 300_000)
        XCTAssertEqual(try lab.sha256(lab.out + "/r.bin"), sum)
    }

    /// A small job, which the metered rule lets run on a metered route (as a job without constraints does here),
    /// waits with `unmetered` until the route to the server leaves on the unmetered eth0.
    func testUnmeteredHoldsASmallJobOnAMeteredRouteUntilTheRouteIsUnmetered() throws {
        lab = try TransferLab(eth0: false)
        try lab.startTestServer()
        try lab.startDaemon()
        let sum = try lab.serve("u.bin", bytes: 300_000)
        let held = try lab.add(lab.url("u.bin"), output: lab.out + "/u.bin", ["--network", "unmetered"])
        let plain = try lab.add(lab.url("u.bin"), output: lab.out + "/plain.bin")
        try lab.waitFor(plain, "the job without constraints completed on wwan0") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/plain.bin"), sum)

        let waiting = try lab.waitFor(held, "waiting for an unmetered route") { $0.state == .deferred && ($0.reason ?? "").contains("metered") }
        XCTAssertEqual(waiting.reason, "waiting: route to mirror.test is metered (wwan0); the job asks for an unmetered one")
        try assertListed(held, reason: waiting.reason ?? "")
        XCTAssertEqual(lab.gets("u.bin").count, 1, "only the job without constraints asked the server")

        try lab.addEth0()
        let done = try lab.waitFor(held, "completed on eth0") { $0.state == .completed }
        XCTAssertEqual(done.bytesMoved, 300_000)
        XCTAssertEqual(try lab.sha256(lab.out + "/u.bin"), sum)
    }

    /// A large job, which the metered rule holds back on a metered route (as a job without constraints waits
    /// here), runs at once with `any`.
    func testAnyRunsALargeJobAtOnceOnAMeteredRoute() throws {
        lab = try TransferLab(eth0: false)
        try lab.startTestServer()
        try lab.startDaemon(config: "[downloads]\nmetered_threshold = 1048576\n")
        let sum = try lab.serve("a.bin", bytes: 3_000_000)
        let plain = try lab.add(lab.url("a.bin"), output: lab.out + "/plain.bin")
        // The size probe's own deferral ("the route is metered; asking the server for the size") comes first: wait past it.
        let waiting = try lab.waitFor(plain, "the job without constraints waiting") { $0.state == .deferred && ($0.reason ?? "").contains("exceed the metered threshold") }
        print("\(name) the default's wait reason: \(waiting.reason ?? "")")
        XCTAssertTrue((waiting.reason ?? "").contains("metered (wwan0)"), waiting.reason ?? "")

        let any = try lab.add(lab.url("a.bin"), output: lab.out + "/a.bin", ["--network", "any"])
        let done = try lab.waitFor(any, "completed on wwan0") { $0.state.isTerminal }
        XCTAssertEqual(done.state, .completed, done.reason ?? "")
        XCTAssertEqual(done.bytesMoved, 3_000_000)
        XCTAssertEqual(try lab.sha256(lab.out + "/a.bin"), sum)
        let still = try lab.client().job(TransferRequest(op: .show, job: plain))
        XCTAssertEqual(still.state, .deferred, "the job without constraints still waits")
        XCTAssertEqual(still.bytesMoved, 0)
    }
}
