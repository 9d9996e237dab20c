import Foundation
import ReachdClient
import ReachdProtocol
import ReachdTransferModel
import ReachdTransferProtocol
import XCTest

/// reachd-transfers against servers that lie: a 206 of another version, a 304 nobody asked for, an encoded
/// body, broken Cache-Control, no-store/Vary/Age, error answers, endless, cut and trickling bodies,
/// credentials asked for over plain http. After each case the same daemon
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
        try lab.waitFor(id, "waiting to retry") { $0.state == .deferred && $0.bytesMoved > 0 }
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
            let fetched = try lab.fetch(lab.url("c.bin?cache-control=\(query)"))
            XCTAssertEqual(fetched.status, 0, directive)
            XCTAssertEqual(fetched.sum, sum, directive)
            try assertStillServing()
        }
    }

    /// Absurd values of every header the service reads (lengths, dates, validators, ranges, encodings, types),
    /// on a download and on a cache fill: the file is the server's bytes, and the daemon lives on.
    func testAbsurdHeaderValuesNeitherCrashNorCorrupt() throws {
        try start()
        let sum = try lab.serve("h.bin", bytes: 30_000)
        let absurd = [
            "ETag:" + String(repeating: "\"", count: 2000), "ETag:W/\"weak\"", "ETag:\"é\"",
            "Last-Modified:Mon, 01 Jan 0000 00:00:00 GMT", "Last-Modified:99999999999999999999999",
            "Date:Fri, 31 Dec 9999 23:59:59 GMT", "Date:Sun, 06 Nov 1994 08:49:37 GMT", "Expires:0",
            "Expires:Fri, 31 Dec 9999 23:59:59 GMT", "Age:99999999999999999999", "Age:-1",
            "Content-Type:multipart/byteranges; boundary=", "Content-Range:bytes 0-1/2", "Content-Range:bytes */-1",
            "Content-Encoding:identity", "Retry-After:99999999999999999999", "Vary:" + String(repeating: "a,", count: 1000),
            "Cache-Control:stale-if-error=99999999999999999999, max-age=0",
        ]
        for (index, header) in absurd.enumerated() {
            let query = "header=" + (header.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            let id = try lab.add(lab.url("h.bin?" + query), output: lab.out + "/h\(index).bin")
            let done = try lab.waitFor(id, "completed") { $0.state.isTerminal }
            XCTAssertEqual(done.state, .completed, "\(header.prefix(60)): \(done.reason ?? "")")
            XCTAssertEqual(try lab.sha256(lab.out + "/h\(index).bin"), sum, String(header.prefix(60)))
            let fetched = try lab.fetch(lab.url("h.bin?" + query))
            XCTAssertEqual(fetched.status, 0, "\(header.prefix(60)): \(fetched.err)")
            XCTAssertEqual(fetched.sum, sum, String(header.prefix(60)))
            try assertStillServing()
        }
    }

    /// `no-store` and `Vary: *` answers are handed over but never served again; a Vary the request matches
    /// is reused; an `Age` past max-age makes the copy stale on arrival.
    func testNoStoreVaryAndAgeAreHonoured() throws {
        try start()
        let sum = try lab.serve("s.bin", bytes: 10_000)
        for (query, reused) in [("cache-control=no-store", false), ("vary=*", false), ("vary=Accept-Encoding,%20User-Agent", true),
                                ("cache-control=max-age%3D60&age=100", true), ("cache-control=max-age%3D60&age=10", true)] {
            XCTAssertEqual(try lab.fetch(lab.url("s.bin?" + query)).sum, sum, query)
            let second = try lab.fetch(lab.url("s.bin?" + query))
            XCTAssertEqual(second.sum, sum, query)
            let requests = lab.requests(path: "s.bin").filter { ($0["query"] as? String) == query }
            switch query {
            case "cache-control=max-age%3D60&age=10":
                XCTAssertEqual(requests.count, 1, "fresh for another 50 s: no request")
                XCTAssertTrue(second.err.contains("fresh (the server allows it until"), second.err)
            default:
                let last = waited(for: { lab.requests(path: "s.bin").filter { ($0["query"] as? String) == query } }, until: { $0.count >= 2 })
                XCTAssertEqual(last.count, 2, query)
                XCTAssertEqual(last.last?["ifNoneMatch"] is String, reused, "\(query): revalidated (reused) or fetched anew")
            }
            try assertStillServing()
        }
        try lab.eth0Down()
        try lab.lab.ip("route del default dev wwan0")
        try lab.waitForLoggedVerdict("unreachable")
        let gone = try lab.fetch(lab.url("s.bin?cache-control=no-store"))
        XCTAssertEqual(gone.status, 1)
        XCTAssertTrue(gone.err.contains("not cached, and mirror.test is not reachable"), gone.err)
        XCTAssertEqual(try lab.fetch(lab.url("s.bin?vary=Accept-Encoding,%20User-Agent")).status, 0)
    }

    /// A 4xx or 5xx is reported, not hidden behind the stale copy, unless stale-if-error allows it or the route
    /// is metered.
    func testErrorAnswersAreReportedUnlessAStaleCopyIsAllowed() throws {
        try start()
        let sum = try lab.serve("e.bin", bytes: 10_000)
        let plain = "e.bin?status=503&status-after=1", allowed = "e.bin?status=503&status-after=1&cache-control=stale-if-error%3D600"
        let metered = "e.bin?status=404&status-after=1"
        for path in [plain, allowed, metered] { XCTAssertEqual(try lab.fetch(lab.url(path)).sum, sum, path) }
        let reported = try lab.fetch(lab.url(plain))
        XCTAssertEqual(reported.status, 1)
        XCTAssertTrue(reported.err.contains("the server answered 503"), reported.err)
        let standIn = try lab.fetch(lab.url(allowed))
        XCTAssertEqual(standIn.sum, sum)
        XCTAssertTrue(standIn.err.contains("the server answered 503 and allows a stale copy then (stale-if-error)"), standIn.err)
        try lab.eth0Down()
        try lab.waitForLoggedVerdict("wwan")
        let onWWAN = try lab.fetch(lab.url(metered))
        XCTAssertEqual(onWWAN.sum, sum)
        XCTAssertTrue(onWWAN.err.contains("the server answered 404 and the route is metered"), onWWAN.err)
        try assertStillServing()
    }

    /// What a server can make the cache write is bounded by its capacity, announced or not; a server that
    /// trickles is cut off by the read timeout, for downloads and fetches alike.
    func testEndlessAndTricklingBodiesAreCutOff() throws {
        try start(config: "read_timeout_seconds = 1\n[cache]\ncapacity_bytes = 100000\n")
        _ = try lab.serve("big.bin", bytes: 8_000_000)
        let announced = try lab.fetch(lab.url("big.bin"))
        XCTAssertEqual(announced.status, 1)
        XCTAssertTrue(announced.err.contains("not cached, and the body (8000000 bytes) is larger than the cache (100000 bytes)"), announced.err)
        let unannounced = try lab.fetch(lab.url("big.bin?no-length=1"))
        XCTAssertEqual(unannounced.status, 1)
        XCTAssertTrue(unannounced.err.contains("not cached, and the body is larger than the cache"), unannounced.err)
        let sent = lab.gets("big.bin", atLeast: 2).last?["bodyBytes"] as? Int ?? 0
        XCTAssertLessThan(sent, 8_000_000, "the read stopped near the bound (socket buffers hold the rest of what was sent)")

        let shortSum = try lab.serve("short.bin", bytes: 50_000)
        let cut = try lab.fetch(lab.url("short.bin?drop-after=20000"))
        XCTAssertEqual(cut.status, 1)
        XCTAssertTrue(cut.err.contains("not cached, and the network failed"), cut.err)
        XCTAssertEqual(try lab.fetch(lab.url("short.bin?drop-after=20000")).sum, shortSum, "the second request is whole")
        XCTAssertTrue(lab.gets("short.bin", atLeast: 2).last?["ifNoneMatch"] is NSNull, "nothing was kept of the cut body")

        let trickled = try lab.fetch(lab.url("short.bin?trickle=3000"))
        XCTAssertEqual(trickled.status, 1)
        XCTAssertTrue(trickled.err.contains("read timeout") || trickled.err.contains("readTimeout"), trickled.err)
        let id = try lab.add(lab.url("short.bin?trickle=3000"), output: lab.out + "/t.bin")
        let waiting = try lab.waitFor(id, "waiting to retry") { $0.state == .deferred && $0.reason != nil }
        XCTAssertTrue(waiting.reason!.contains("readTimeout"), waiting.reason!)
        try assertStillServing()
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
