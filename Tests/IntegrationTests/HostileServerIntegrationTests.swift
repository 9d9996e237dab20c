import Foundation
import ReachdClient
import ReachdProtocol
import ReachdTransferModel
import XCTest

/// reachd-transfers against servers that lie: a 206 of another version, a 304 nobody asked for, an encoded
/// body, broken Cache-Control, credentials asked for over plain http. After each case the same daemon
/// process still answers (nothing in the lab restarts it, so a crash fails the test).
final class HostileServerIntegrationTests: XCTestCase {
    private var lab: TransferLab!
    /// Jobs over 1 MiB are large.
    private let config = "[downloads]\nmetered_threshold = 1048576\n"

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    private func start(eth0: Bool = true, config extra: String = "") throws {
        lab = try TransferLab(eth0: eth0)
        try lab.startTestServer()
        try lab.startDaemon(config: config + extra)
    }

    /// The daemon that started the test still serves.
    private func assertStillServing(file: StaticString = #filePath, line: UInt = #line) throws {
        let answer = try lab.client().call(TransferRequest(op: .ping), timeout: 10)
        guard case .pong = answer else { return XCTFail("reachd-transfers does not answer: \(lab.log.suffix(2000))", file: file, line: line) }
    }

    func testA206OfAnotherVersionIsNeverSpliced() throws {
        try start()
        _ = try lab.serve("f.bin", bytes: 3_000_000, seed: 1)
        // The server honours Range but ignores If-Range: after the drop it sends the new version's bytes as a 206.
        let id = try lab.add(lab.url("f.bin?drop-after=1000000&ignore-if-range=1"), output: lab.out + "/f.bin")
        try lab.waitFor(id, "waiting to retry") { $0.state == .deferred && $0.bytesReceived > 0 }
        let newSum = try lab.serve("f.bin", bytes: 3_000_000, seed: 7)
        let done = try lab.waitFor(id, "completed") { $0.state.isTerminal }
        XCTAssertEqual(done.state, .completed, done.reason ?? "")
        XCTAssertEqual(try lab.sha256(lab.out + "/f.bin"), newSum, "the new version, whole, not old bytes plus new")
        let statuses = lab.gets("f.bin", atLeast: 3).map { $0["status"] as? Int }
        XCTAssertEqual(Array(statuses.prefix(3)), [200, 206, 200], "the lying 206 was discarded and the file fetched again")
        XCTAssertTrue(lab.log.contains("discarded the partial file: the server's 206 names another version"), lab.log.suffix(3000).description)
        try assertStillServing()
    }

    func testA304ToAnUnconditionalRequestIsRetriedNotCompleted() throws {
        try start()
        let sum = try lab.serve("n.bin", bytes: 200_000)
        let id = try lab.add(lab.url("n.bin?status=304&status-times=1"), output: lab.out + "/n.bin")
        let done = try lab.waitFor(id, "completed after a retry") { $0.state.isTerminal }
        XCTAssertEqual(done.state, .completed, done.reason ?? "")
        XCTAssertEqual(try lab.sha256(lab.out + "/n.bin"), sum)
        let requests = lab.gets("n.bin", atLeast: 2)
        XCTAssertEqual(requests.map { $0["status"] as? Int }, [304, 200])
        XCTAssertTrue(requests.allSatisfy { $0["ifNoneMatch"] is NSNull && $0["ifModifiedSince"] is NSNull })
        try assertStillServing()
    }

    func testAnEncodedBodyIsRefused() throws {
        try start()
        _ = try lab.serve("z.bin", bytes: 50_000)
        let id = try lab.add(lab.url("z.bin?content-encoding=gzip"), output: lab.out + "/z.bin")
        let done = try lab.waitFor(id, "failed") { $0.state.isTerminal }
        XCTAssertEqual(done.state, .failed)
        XCTAssertEqual(done.reason, "failed: the server sent the body with Content-Encoding gzip although identity was asked for")
        XCTAssertFalse(FileManager.default.fileExists(atPath: lab.out + "/z.bin"))
        try assertStillServing()
    }

    func testBrokenCacheControlDoesNotCrashTheCache() throws {
        try start()
        let sum = try lab.serve("c.bin", bytes: 10_000)
        for directive in ["max-age", "max-age=", "max-age=99999999999999999999999", "s-maxage", "max-age=\"1", ",,=,"] {
            let query = directive.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let out = lab.lab.directory + "/fetch.out"
            let status = try lab.lab.run("\(NetLab.binary("reachctl")) fetch '\(lab.url("c.bin?cache-control=\(query)"))' "
                + "--transfers-socket \(lab.socketPath) > \(out); echo $?").trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertEqual(status, "0", directive)
            XCTAssertEqual(try lab.sha256(out), sum, directive)
            try assertStillServing()
        }
    }

    /// The size probe on a metered route (HEAD) goes the way every request goes: no netrc credentials over
    /// plain http. Before, the HEAD carried them.
    func testNoCredentialsOverPlainHTTPOnAnyRequest() throws {
        let netrc = NSTemporaryDirectory() + "reachd-hostile-netrc-\(getpid())"
        try "machine mirror.test login alice password secret-\(getpid())\n".write(toFile: netrc, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: netrc) }
        try start(eth0: false, config: "netrc = \"\(netrc)\"\n")
        _ = try lab.serve("big.bin", bytes: 2_000_000)
        // Unknown size on wwan0: the scheduler asks with HEAD first.
        let id = try lab.add(lab.url("big.bin?no-length=1"), output: lab.out + "/big.bin")
        let done = try lab.waitFor(id, "failed or deferred") { $0.state == .failed || $0.state == .deferred }
        XCTAssertNotNil(done.reason)
        let seen = lab.requests(path: "big.bin")
        XCTAssertTrue(seen.allSatisfy { $0["authorization"] is NSNull }, "credentials went over plain http: \(seen)")
        try assertStillServing()
    }
}
