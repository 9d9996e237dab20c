import Foundation
import ReachdTransferModel
import XCTest

/// Suspend against logind as python-dbusmock's `logind` template serves it on a private bus that reachd-transfers
/// takes for the system bus: a delay inhibitor held while awake, a running transfer stopped (its partial file
/// kept) and the inhibitor let go at `PrepareForSleep(true)`, the transfer going on from its partial file and a new
/// inhibitor taken at `PrepareForSleep(false)`.
final class SleepIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    private var bus: PrivateBus?
    private var logind: Process?
    private static let login = "org.freedesktop.login1"

    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/dbusmock/templates/logind.py"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/busctl") else {
            throw XCTSkip("python3-dbusmock (Debian) and busctl are needed")
        }
        lab = try TransferLab()
        bus = try PrivateBus(directory: lab.lab.directory, policies: [])
        try lab.startTestServer()
    }

    override func tearDown() {
        lab?.tearDown()
        if let logind, logind.isRunning {
            logind.terminate()
            logind.waitUntilExit()
        }
        bus?.stop()
    }

    func testARunningTransferStopsBeforeSleepAndGoesOnAfterResume() throws {
        try startLogind()
        try lab.startDaemon(arguments: ["--power", "system"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus!.address])
        try eventually("reachd-transfers to hold a delay inhibitor", detail: (try? busctl("ListInhibitors")) ?? "") { try inhibitorHeld() }

        let sum = try lab.serve("s.bin", bytes: 12 << 20)
        let id = try lab.add(lab.url("s.bin?rate=4000000"), output: lab.out + "/s.bin", ["--sha256", sum])
        try lab.waitFor(id, "running with 2 MB on disk") { $0.state == .running && $0.bytesMoved > 2_000_000 }

        try emitPrepareForSleep(true)
        let stopped = try lab.waitFor(id, "stopped for the sleep") { $0.state == .deferred && $0.reason == "deferred: the machine went to sleep" }
        XCTAssertLessThan(stopped.bytesMoved, 12 << 20)
        try eventually("the inhibitor let go", detail: (try? busctl("ListInhibitors")) ?? "") { try !inhibitorHeld() }
        XCTAssertEqual(lab.gets("s.bin").count, 1, "no transfer starts while the machine sleeps")

        try emitPrepareForSleep(false)
        let done = try lab.waitFor(id, "completed after the resume") { $0.state == .completed }
        XCTAssertEqual(done.bytesMoved, 12 << 20)
        XCTAssertEqual(try lab.sha256(lab.out + "/s.bin"), sum)
        let requests = lab.gets("s.bin", atLeast: 2)
        XCTAssertEqual(requests.last?["status"] as? Int, 206, "the second request goes on from the partial file: \(requests)")
        try eventually("a new inhibitor", detail: (try? busctl("ListInhibitors")) ?? "") { try inhibitorHeld() }
    }

    /// A transfer that does not stop (its write hangs in a file system that does not answer) holds the sleep no
    /// longer than the 1 s grace: the inhibitor is let go while the transfer still runs.
    func testATransferThatDoesNotStopHoldsTheSleepOnlyForTheGrace() throws {
        guard HangingFileSystem.available else { throw XCTSkip("python3-fuse and /dev/fuse are needed") }
        let fileSystem = try HangingFileSystem(in: lab, writesHangPast: 1 << 20)
        defer { fileSystem.tearDown(lab) }
        try startLogind()
        try lab.startDaemon(arguments: ["--power", "system"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus!.address])
        try eventually("reachd-transfers to hold a delay inhibitor", detail: (try? busctl("ListInhibitors")) ?? "") { try inhibitorHeld() }
        let sum = try lab.serve("h.bin", bytes: 3 << 20)
        let id = try lab.add(lab.url("h.bin"), output: fileSystem.mountPoint + "/h.bin", ["--sha256", sum])
        try lab.waitFor(id, "running") { $0.state == .running }
        try fileSystem.waitForHangingWrite()

        // The transfer's write past 1 MiB hangs: it cannot stop.
        try emitPrepareForSleep(true)
        try eventually("the inhibitor let go", detail: (try? busctl("ListInhibitors")) ?? "") { try !inhibitorHeld() }
        let shown = try lab.download(["show", id, "--json"])
        XCTAssertTrue(shown.out.contains("\"state\":\"running\""), "the transfer has not stopped yet: \(shown.out)")

        fileSystem.releaseCalls()
        try emitPrepareForSleep(false)
        try lab.waitFor(id, "completed after the resume") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(fileSystem.mountPoint + "/h.bin"), sum)
    }

    private func startLogind() throws {
        logind = try bus!.startMock("logind", name: Self.login, log: lab.lab.directory + "/logind.log")
    }

    /// Whether reachd-transfers holds a delay inhibitor of sleep (logind's `ListInhibitors`).
    private func inhibitorHeld() throws -> Bool {
        let listed = try busctl("ListInhibitors")
        return listed.contains("\"sleep\" \"reachd-transfers\"") && listed.contains("\"delay\"")
    }

    private func emitPrepareForSleep(_ sleeping: Bool) throws {
        _ = try lab.lab.run("busctl --address=\(bus!.address) call \(Self.login) /org/freedesktop/login1 org.freedesktop.DBus.Mock EmitSignal "
            + "sssav org.freedesktop.login1.Manager PrepareForSleep b 1 b \(sleeping)")
    }

    private func busctl(_ method: String) throws -> String {
        try lab.lab.run("busctl --address=\(bus!.address) call \(Self.login) /org/freedesktop/login1 org.freedesktop.login1.Manager \(method)")
    }
}
