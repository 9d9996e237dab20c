import Foundation
import ReachdClient
import ReachdProtocol
import ReachdTransferModel
import XCTest

/// Refresh jobs: conditional checks (If-None-Match) against reachd-testserver, 304 without a body, a
/// changed file swapped in atomically, a failed refresh keeping the file, and metered gating of a refresh.
final class RefreshIntegrationTests: XCTestCase {
    private var lab: TransferLab!

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    private func start() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.startDaemon(config: "[downloads]\nmetered_threshold = 1048576\n")
    }

    private func inode(_ path: String) -> UInt {
        var info = stat()
        return stat(path, &info) == 0 ? UInt(info.st_ino) : 0
    }

    /// When the directory's entries last changed, in nanoseconds (a file created or removed there moves it).
    private func entriesChanged(_ directory: String) -> Int64 {
        var info = stat()
        return stat(directory, &info) == 0 ? Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec) : 0
    }

    func testPeriodicCheckGets304AndLeavesTheFile() throws {
        try start()
        let sum = try lab.serve("r.bin", bytes: 400_000)
        let id = try lab.add(lab.url("r.bin"), output: lab.out + "/r.bin", ["--refresh-every", "1s"])
        let first = try lab.waitFor(id, "completed") { $0.state == .completed && $0.download?.lastChecked != nil }
        XCTAssertEqual(first.download?.refreshSeconds, 1)
        XCTAssertNotNil(first.download?.nextCheck)
        let etag = try XCTUnwrap(first.download?.partial.etag)
        let before = inode(lab.out + "/r.bin")
        let entries = entriesChanged(lab.out)
        let checked = try lab.waitFor(id, "checked again", timeout: 30) { $0.state == .completed && $0.download?.lastChecked != first.download?.lastChecked }
        XCTAssertEqual(checked.bytesMoved, 400_000)
        XCTAssertGreaterThan(checked.download!.nextCheck!, checked.download!.lastChecked!)
        XCTAssertEqual(inode(lab.out + "/r.bin"), before, "the file was not rewritten")
        XCTAssertEqual(entriesChanged(lab.out), entries, "a check answered 304 created and removed no partial file beside it")
        XCTAssertEqual(try lab.sha256(lab.out + "/r.bin"), sum)
        let check = try XCTUnwrap(lab.gets("r.bin", atLeast: 2).dropFirst().first)
        XCTAssertEqual(check["status"] as? Int, 304)
        XCTAssertEqual(check["bodyBytes"] as? Int, 0)
        XCTAssertEqual(check["ifNoneMatch"] as? String, etag)
    }

    func testChangedFileIsSwappedInAndAFailedRefreshKeepsIt() throws {
        try start()
        _ = try lab.serve("r.bin", bytes: 300_000, seed: 1)
        let id = try lab.add(lab.url("r.bin"), output: lab.out + "/r.bin")
        let first = try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertNil(first.download?.nextCheck, "a one-off download plans no check")
        let newSum = try lab.serve("r.bin", bytes: 250_000, seed: 9)
        XCTAssertEqual(try lab.download(["refresh", id]).status, 0)
        let swapped = try lab.waitFor(id, "replaced") { $0.state == .completed && $0.download?.lastChecked != first.download?.lastChecked }
        XCTAssertEqual(try lab.sha256(lab.out + "/r.bin"), newSum)
        XCTAssertNotEqual(swapped.download?.partial.etag, first.download?.partial.etag, "the new version's validators")
        XCTAssertEqual(swapped.bytesMoved, 250_000)
        XCTAssertEqual(lab.gets("r.bin", atLeast: 2).last?["status"] as? Int, 200)

        try FileManager.default.removeItem(atPath: lab.www + "/r.bin")
        XCTAssertEqual(try lab.download(["refresh", id]).status, 0)
        let failed = try lab.waitFor(id, "refresh failed") { $0.state == .completed && ($0.reason ?? "").contains("refresh failed") }
        XCTAssertEqual(failed.reason, "refresh failed (failed: server answered 404); the file in place is kept")
        XCTAssertEqual(try lab.sha256(lab.out + "/r.bin"), newSum)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: lab.out), ["r.bin"], "no partial file left")
    }

    /// The new version's body breaks off before its Content-Length: the refresh is not taken as done, the
    /// file in place stays, and the rest of the new version is resumed under its own validator.
    func testARefreshCutShortIsResumedNotSwappedIn() throws {
        try start()
        let oldSum = try lab.serve("r.bin", bytes: 100_000, seed: 1)
        // The first two requests break off after 150,000 bytes: the 100,000-byte download is whole, the refresh is not.
        let id = try lab.add(lab.url("r.bin?drop-after=150000&drop-times=2"), output: lab.out + "/r.bin")
        let first = try lab.waitFor(id, "completed") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/r.bin"), oldSum)
        let newSum = try lab.serve("r.bin", bytes: 400_000, seed: 5)
        XCTAssertEqual(try lab.download(["refresh", id]).status, 0)
        let swapped = try lab.waitFor(id, "replaced") { $0.state == .completed && $0.download?.lastChecked != first.download?.lastChecked }
        XCTAssertEqual(swapped.bytesMoved, 400_000)
        XCTAssertEqual(try lab.sha256(lab.out + "/r.bin"), newSum)
        let requests = lab.gets("r.bin", atLeast: 3)
        XCTAssertEqual(requests.map { $0["status"] as? Int }, [200, 200, 206])
        XCTAssertEqual(requests[1]["completed"] as? Bool, false, "the refresh's body broke off")
        // Resumed, not restarted: from what reached the partial file before the break (all 150,000 bytes when
        // the writer had taken them in, less on a loaded machine).
        let range = try XCTUnwrap(requests[2]["range"] as? String)
        let offset = try XCTUnwrap(Int(range.dropFirst("bytes=".count).dropLast()), range)
        XCTAssertTrue(range.hasPrefix("bytes=") && range.hasSuffix("-") && (1...150_000).contains(offset), range)
        XCTAssertEqual(requests[2]["ifRange"] as? String, swapped.download?.partial.etag, "resumed under the new version's validator")
    }

    func testALargeNewVersionWaitsForAnUnmeteredRouteWhileAnUnchangedOneIsCheckedOnWWAN() throws {
        try start()
        let oldSum = try lab.serve("big.bin", bytes: 3_000_000, seed: 1)
        let id = try lab.add(lab.url("big.bin"), output: lab.out + "/big.bin")
        var job = try lab.waitFor(id, "completed") { $0.state == .completed }
        try lab.eth0Down()
        try lab.waitForLoggedVerdict("wwan")
        XCTAssertEqual(try lab.download(["refresh", id]).status, 0)
        job = try lab.waitFor(id, "checked on wwan0") { [last = job.download?.lastChecked] in $0.state == .completed && $0.download?.lastChecked != last }
        XCTAssertEqual(lab.gets("big.bin", atLeast: 2).last?["status"] as? Int, 304, "a check costs no body, so it runs on a metered route")

        let newSum = try lab.serve("big.bin", bytes: 3_500_000, seed: 5)
        XCTAssertEqual(try lab.download(["refresh", id]).status, 0)
        let deferred = try lab.waitFor(id, "deferred for the metered route") { $0.state == .deferred && ($0.reason ?? "").contains("exceed the metered threshold") }
        XCTAssertTrue(deferred.reason!.contains("3500000 bytes exceed the metered threshold"), deferred.reason!)
        XCTAssertEqual(try lab.sha256(lab.out + "/big.bin"), oldSum, "the old file stays while the new one waits")

        try lab.eth0Up()
        try lab.waitFor(id, "replaced over eth0") { $0.state == .completed && $0.bytesMoved == 3_500_000 }
        XCTAssertEqual(try lab.sha256(lab.out + "/big.bin"), newSum)
    }

    func testRefreshNeedsACompletedJob() throws {
        try start()
        _ = try lab.serve("slow.bin", bytes: 2_000_000)
        let id = try lab.add(lab.url("slow.bin?rate=500000"), output: lab.out + "/slow.bin")
        try lab.waitFor(id, "running") { $0.state == .running }
        let refused = try lab.download(["refresh", id])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.err.contains("(conflict)") && refused.err.contains("only a completed download can be refreshed"), refused.err)
        let badInterval = try lab.download(["add", lab.url("slow.bin"), "--output", lab.out + "/x", "--refresh-every", "soon"])
        XCTAssertEqual(badInterval.status, 64, "a usage error")
        XCTAssertTrue(badInterval.err.contains("--refresh-every must be a duration"), badInterval.err)
    }
}
