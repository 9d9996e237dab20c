import Foundation
import ReachdModel
import ReachdTestSupport
import ReachdTransferModel
import XCTest

/// Returns the given values in order (for `Job.newID`).
private struct FixedGenerator: RandomNumberGenerator {
    var values: [UInt64]
    mutating func next() -> UInt64 { values.removeFirst() }
}

final class TransferModelTests: XCTestCase {
    // MARK: Fixtures

    private static let mirror = IPAddress("198.18.0.5")!
    private static let snapshot = NetworkSnapshot(links: [
        LinkInfo(index: 2, name: "eth0", flags: [.up, .running, .lowerUp], carrier: true),
        LinkInfo(index: 4, name: "wwan0", flags: [.up, .running, .lowerUp], carrier: true),
    ])

    /// A real host verdict for mirror.test routed out of link `index` (2: wired, 4: wwan, metered).
    private static func routed(_ index: Int32) -> Verdict {
        HostVerdict().verdict(
            host: "mirror.test", resolution: .addresses([mirror]),
            decisions: [mirror: .route(type: .unicast, interfaceIndex: index, gateway: IPAddress("192.0.2.1"),
                                       source: IPAddress("192.0.2.2"))], in: snapshot)
    }

    private static let unresolved = HostVerdict().verdict(host: "mirror.test", resolution: .failed("Name or service not known"),
                                                          decisions: [:], in: snapshot)

    private func job(_ id: String, _ sequence: Int64, _ priority: Priority = .normal, _ state: JobState = .queued,
                     output: String = "/srv/x.iso") -> Job {
        var job = Job(id: id, sequence: sequence, spec: DownloadSpec(url: "http://mirror.test/x", output: output, priority: priority),
                      owner: Owner(uid: 1000, gid: 1000, groups: [27]), created: Timestamp(microseconds: 1_700_000_000_000_000))
        job.state = state
        return job
    }

    // MARK: TransferGate

    func testGateDecisions() {
        let wired = Self.routed(2), wwan = Self.routed(4)
        XCTAssertFalse(wired.metered)
        XCTAssertTrue(wwan.metered)
        XCTAssertEqual(wwan.interface, "wwan0")
        let gate = TransferGate()
        let mib: Int64 = 1024 * 1024
        let waits = "; waits for an unmetered route or --allow-metered"
        let unreachable = "deferred: mirror.test is not reachable (name not resolved); waits for a route to it"
        typealias Case = (Verdict?, Int64?, Bool, Bool, TransferGate.Decision, Int)
        let table: [Case] = [
            (Self.unresolved, 1, true, false, .wait(reason: unreachable), #line),
            (Self.unresolved, 1, true, true, .wait(reason: unreachable), #line),
            (nil, 1, true, true, .wait(reason: "deferred: route to mirror.test not known yet"), #line),
            (wired, nil, false, false, .run, #line),
            (wired, 100 * mib, true, false, .run, #line),
            (wwan, nil, false, true, .run, #line),
            (wwan, 100 * mib, true, true, .run, #line),
            (wwan, 1, true, false, .run, #line),
            (wwan, 10 * mib, true, false, .run, #line),
            (wwan, 10 * mib + 1, true, false, .wait(reason: "deferred: route to mirror.test is metered (wwan0), "
                + "10485761 bytes exceed the metered threshold of 10485760" + waits), #line),
            (wwan, nil, false, false, .needSize, #line),
            (wwan, nil, true, false, .wait(reason: "deferred: route to mirror.test is metered (wwan0), size unknown" + waits), #line),
        ]
        for (verdict, size, checked, allow, expected, line) in table {
            XCTAssertEqual(gate.decide(host: "mirror.test", verdict: verdict, size: size, sizeChecked: checked, allowMetered: allow),
                           expected, line: UInt(line))
        }
        var noInterface = wwan
        noInterface.interface = nil
        XCTAssertEqual(TransferGate(meteredThreshold: 5).decide(host: "h", verdict: noInterface, size: 6, sizeChecked: true, allowMetered: false),
                       .wait(reason: "deferred: route to h is metered, 6 bytes exceed the metered threshold of 5" + waits))
        XCTAssertEqual([nil, 0, 10 * mib, 10 * mib + 1].map(gate.isLarge), [true, false, false, true])
    }

    /// Behind a captive portal that holds the client every transfer waits, naming the portal; a portal's byte
    /// allowance counts as a metered route; a portal that lets traffic through (or has not answered) changes nothing.
    func testGateBehindACaptivePortal() {
        let gate = TransferGate(meteredThreshold: 5)
        var held = Self.routed(2)
        held.captivePortal = CaptivePortal(apiURL: "https://portal.test/api",
                                           status: CaptivePortalStatus(captive: true, userPortalURL: "https://portal.test/login"))
        XCTAssertEqual(gate.decide(host: "h", verdict: held, size: 1, sizeChecked: true, allowMetered: true),
                       .wait(reason: "deferred: route to h is held by a captive portal (https://portal.test/login); waits until it lets traffic through"))
        held.captivePortal?.status?.userPortalURL = nil
        XCTAssertEqual(gate.decide(host: "h", verdict: held, size: 1, sizeChecked: true, allowMetered: false),
                       .wait(reason: "deferred: route to h is held by a captive portal (https://portal.test/api); waits until it lets traffic through"))
        var allowance = Self.routed(2)
        allowance.captivePortal = CaptivePortal(apiURL: "https://portal.test/api", status: CaptivePortalStatus(captive: false, bytesRemaining: 1000))
        XCTAssertEqual(gate.decide(host: "h", verdict: allowance, size: 6, sizeChecked: true, allowMetered: false),
                       .wait(reason: "deferred: route to h has a captive portal's byte allowance (eth0), 6 bytes exceed the metered threshold of 5"
                             + "; waits for an unmetered route or --allow-metered"))
        XCTAssertEqual(gate.decide(host: "h", verdict: allowance, size: 5, sizeChecked: true, allowMetered: false), .run)
        XCTAssertEqual(gate.decide(host: "h", verdict: allowance, size: 6, sizeChecked: true, allowMetered: true), .run)
        var open = Self.routed(2)
        open.captivePortal = CaptivePortal(apiURL: "https://portal.test/api", status: CaptivePortalStatus(captive: false, secondsRemaining: 60))
        XCTAssertEqual(gate.decide(host: "h", verdict: open, size: 6, sizeChecked: true, allowMetered: false), .run)
        open.captivePortal?.status = nil
        XCTAssertEqual(gate.decide(host: "h", verdict: open, size: 6, sizeChecked: true, allowMetered: false), .run)
    }

    // MARK: ResumePlan

    func testResumeRequest() {
        let strong = Validators(etag: "\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
        let weak = Validators(etag: "W/\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT", date: "Sun, 06 Nov 1994 08:49:38 GMT")
        let table: [(Int64, Validators, Int64, [String], Int)] = [
            (0, strong, 0, [], #line), (100, strong, 100, ["Range: bytes=100-", "If-Range: \"v1\""], #line),
            (100, weak, 100, ["Range: bytes=100-", "If-Range: Sun, 06 Nov 1994 08:49:37 GMT"], #line),
            (100, Validators(etag: "W/\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"), 0, [], #line),
            (100, Validators(etag: "W/\"v1\""), 0, [], #line), (100, Validators(etag: "\""), 0, [], #line), (100, Validators(), 0, [], #line),
        ]
        for (offset, validators, expectedOffset, headers, line) in table {
            let request = ResumePlan.request(offset: offset, validators: validators)
            XCTAssertEqual(request.offset, expectedOffset, line: UInt(line))
            XCTAssertEqual(request.headers.map { "\($0.0): \($0.1)" }, headers, line: UInt(line))
        }
    }

    func testResumeInterpret() {
        let v = Validators(etag: "\"v2\"")
        typealias R = ResumePlan.Response
        let table: [(R, Int64, ResumePlan.Action, Int)] = [
            (R(status: 200, contentLength: 500, validators: v), 0, .write(offset: 0, total: 500, validators: v), #line),
            (R(status: 200, validators: v), 100, .write(offset: 0, total: nil, validators: v), #line),
            (R(status: 206, contentRange: "bytes 100-499/500", validators: v), 100, .write(offset: 100, total: 500, validators: v),
             #line),
            (R(status: 206, contentRange: "bytes 100-499/*", validators: v), 100, .write(offset: 100, total: nil, validators: v),
             #line),
            (R(status: 206, contentRange: "bytes 0-499/500", validators: v), 100,
             .restart(reason: "discarded the partial file: the server resumed at byte 0 instead of 100"), #line),
            (R(status: 206, contentRange: "bytes */500", validators: v), 100,
             .restart(reason: "discarded the partial file: the server resumed at byte ? instead of 100"), #line),
            (R(status: 206, validators: v), 100, .restart(reason: "discarded the partial file: the server sent 206 without a usable Content-Range"), #line),
            (R(status: 206, contentRange: "bytes 0-9/10", validators: v), 0,
             .restart(reason: "discarded the partial file: the server sent 206 without a usable Content-Range"), #line),
            (R(status: 206, contentRange: "bytes 100-199/500", validators: v), 100,
             .restart(reason: "discarded the partial file: the server's 206 stops before the end (bytes 100-199/500)"), #line),
            (R(status: 416, contentRange: "bytes */500"), 500, .complete, #line),
            (R(status: 416, contentRange: "bytes */600"), 500,
             .restart(reason: "server refused the range (416) for a partial file of 500 bytes"), #line),
            (R(status: 416), 500, .restart(reason: "server refused the range (416) for a partial file of 500 bytes"), #line),
        ]
        for (response, offset, expected, line) in table {
            XCTAssertEqual(ResumePlan.interpret(response, offset: offset, current: v), expected, line: UInt(line))
        }
        XCTAssertEqual(RetryPolicy().delay(afterAttempt: 0, retryAfter: nil, jitter: 1), 1)
        for (status, retryAfter) in [(503, "120"), (500, nil), (502, nil), (429, "5"), (425, nil), (408, "Sun, 06 Nov 1994 08:49:37 GMT")] {
            XCTAssertEqual(ResumePlan.interpret(R(status: status, retryAfter: retryAfter), offset: 7),
                           .retry(reason: "server answered \(status)", retryAfter: retryAfter))
        }
        for status in [404, 403, 410, 401, 400, 204] {
            XCTAssertEqual(ResumePlan.interpret(R(status: status, retryAfter: "1"), offset: 7), .fail(reason: "failed: server answered \(status)"))
        }
        XCTAssertEqual(ResumePlan.interpret(R(status: 304), offset: 0, conditional: true), .notModified)
        for status in [300, 301, 307, 308] {
            XCTAssertEqual(ResumePlan.interpret(R(status: status), offset: 0),
                           .fail(reason: "failed: server answered \(status) (too many redirects or no Location)"))
        }
    }

    /// A 206 is written only when it continues the partial file's version, at its offset, to the known end.
    func testResumeNeverSplices() {
        typealias R = ResumePlan.Response
        let date = "Sun, 06 Nov 1994 08:49:37 GMT", earlier = "Sun, 06 Nov 1994 08:00:00 GMT"
        let tagged = Validators(etag: "\"v1\"", lastModified: earlier, date: date)
        let dated = Validators(etag: nil, lastModified: earlier, date: date)
        XCTAssertTrue(dated.lastModifiedIsStrong)
        let range = "bytes 100-499/500"
        let splices: [(Validators, R, Int64?, Int)] = [
            // A server that ignores If-Range and sends another version's bytes.
            (tagged, R(status: 206, contentRange: range, validators: Validators(etag: "\"v2\"")), 500, #line),
            (tagged, R(status: 206, contentRange: range, validators: Validators(etag: "W/\"v1\"")), 500, #line),
            (tagged, R(status: 206, contentRange: range), 500, #line),
            (tagged, R(status: 206, contentRange: range, validators: Validators(lastModified: earlier)), 500, #line),
            (dated, R(status: 206, contentRange: range, validators: Validators(lastModified: date)), 500, #line),
            (dated, R(status: 206, contentRange: range), 500, #line),
            // The partial file's version cannot be named: nothing may continue it.
            (Validators(etag: "W/\"v1\""), R(status: 206, contentRange: range, validators: Validators(etag: "W/\"v1\"")), 500, #line),
            (Validators(lastModified: earlier), R(status: 206, contentRange: range, validators: Validators(lastModified: earlier)), 500, #line),
            // Another total than the file's known size.
            (tagged, R(status: 206, contentRange: "bytes 100-599/600", validators: tagged), 500, #line),
            (tagged, R(status: 206, contentRange: "bytes 100-499/*", validators: tagged), 500, #line),
        ]
        for (partial, response, total, line) in splices {
            guard case .restart(let reason) = ResumePlan.interpret(response, offset: 100, current: partial, total: total) else {
                XCTFail("a splice was accepted", line: UInt(line))
                continue
            }
            XCTAssertTrue(reason.hasPrefix("discarded the partial file: "), reason, line: UInt(line))
        }
        XCTAssertEqual(ResumePlan.interpret(R(status: 206, contentRange: range, validators: Validators(etag: "\"v1\"")), offset: 100,
                                            current: tagged, total: 500),
                       .write(offset: 100, total: 500, validators: tagged))
        XCTAssertEqual(ResumePlan.interpret(R(status: 206, contentRange: range, validators: Validators(lastModified: earlier)), offset: 100,
                                            current: dated, total: 500),
                       .write(offset: 100, total: 500, validators: dated))
        // A 304 to an unconditional request is the server's error, never "completed".
        XCTAssertEqual(ResumePlan.interpret(R(status: 304), offset: 0),
                       .retry(reason: "server answered 304 to a request without a condition", retryAfter: nil))
        // Bytes on disk are the representation's own: no encoding but identity.
        for encoding in ["gzip", "br", " deflate ", "identity, gzip", "x-\u{1}evil"] {
            guard case .fail(let reason) = ResumePlan.interpret(R(status: 200, contentEncoding: encoding), offset: 0) else {
                XCTFail("Content-Encoding \(encoding) was accepted")
                continue
            }
            XCTAssertTrue(reason.contains("although identity was asked for") && !reason.contains("\u{1}"), reason)
        }
        for encoding in ["identity", "IDENTITY", " ", ""] {
            XCTAssertEqual(ResumePlan.interpret(R(status: 200, contentLength: 5, contentEncoding: encoding), offset: 0),
                           .write(offset: 0, total: 5, validators: Validators()), encoding)
        }
    }

    /// If-Range only with a validator that names one version.
    func testIfRangeNeedsAStrongValidator() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        let cases: [(Validators, String?, Int)] = [
            (Validators(etag: "\"a\""), "\"a\"", #line),
            (Validators(etag: "W/\"a\""), nil, #line),
            (Validators(etag: "\"a\"b\""), nil, #line),
            (Validators(etag: "\""), nil, #line),
            (Validators(etag: "a"), nil, #line),
            (Validators(etag: "W/\"a\"", lastModified: "Sun, 06 Nov 1994 08:49:36 GMT", date: date), "Sun, 06 Nov 1994 08:49:36 GMT", #line),
            (Validators(etag: nil, lastModified: date, date: date), nil, #line),
            (Validators(etag: nil, lastModified: "Sun, 06 Nov 1994 08:49:36 GMT", date: nil), nil, #line),
            (Validators(etag: nil, lastModified: "garbage", date: date), nil, #line),
        ]
        for (validators, ifRange, line) in cases {
            XCTAssertEqual(validators.ifRange, ifRange, line: UInt(line))
            let request = ResumePlan.request(offset: 10, validators: validators)
            XCTAssertEqual(request.offset, ifRange == nil ? 0 : 10, line: UInt(line))
        }
        // Old job rows and wire forms without the flag decode as not strong.
        let decoded = try? JSONDecoder().decode(Validators.self, from: Data(#"{"lastModified":"Sun, 06 Nov 1994 08:49:36 GMT"}"#.utf8))
        XCTAssertEqual(decoded, Validators(lastModified: "Sun, 06 Nov 1994 08:49:36 GMT"))
    }

    func testContentRange() {
        let table: [(String, [Int64?]?)] = [
            ("bytes 0-99/100", [0, 99, 100]), ("bytes 100-199/*", [100, 199, nil]), ("bytes */500", [nil, nil, 500]),
            ("BYTES 5-5/6", [5, 5, 6]), ("  bytes  1-2/3", [1, 2, 3]), ("bytes 0-0/1", [0, 0, 1]),
            ("bytes */*", nil), ("bytes 0-100/100", nil), ("bytes 0-99/99", nil), ("bytes 9-5/100", nil), ("bytes -5/100", nil),
            ("bytes 0-/100", nil), ("bytes 0-99", nil), ("bytes 0-99/-1", nil), ("bytes 0-99/100 ", nil), ("items 0-99/100", nil),
            ("bytes=0-99/100", nil), ("", nil), ("junk", nil),
        ]
        for (text, expected) in table {
            XCTAssertEqual(ContentRange(text).map { [$0.first, $0.last, $0.total] }, expected, text)
        }
    }

    // MARK: RetryPolicy and HTTPDate

    func testRetryDelay() {
        let policy = RetryPolicy(baseSeconds: 2, maximumSeconds: 60, maximumAttempts: 6)
        // (attempt, Retry-After, jitter, delay)
        let table: [(Int, Double?, Double, Double?)] = [
            (1, nil, 1, 2), (1, nil, 0, 1), (1, nil, 0.5, 1.5), (2, nil, 1, 4), (3, nil, 1, 8), (4, nil, 0, 8),
            (5, nil, 1, 32), (5, nil, 7, 32), (5, nil, -3, 16),
            (3, 30, 1, 30), (3, 3, 1, 8), (3, 600, 0, 60),
            (6, nil, 1, nil), (6, 5, 1, nil), (7, nil, 1, nil),
        ]
        for (attempt, retryAfter, jitter, expected) in table {
            XCTAssertEqual(policy.delay(afterAttempt: attempt, retryAfter: retryAfter, jitter: jitter), expected,
                           "attempt \(attempt), Retry-After \(retryAfter as Any), jitter \(jitter)")
        }
        let capped = RetryPolicy(baseSeconds: 1, maximumSeconds: 300, maximumAttempts: 100)
        XCTAssertEqual([(9, 1.0), (10, 1), (10, 0), (99, 1)].map { capped.delay(afterAttempt: $0.0, retryAfter: nil, jitter: $0.1) },
                       [256, 300, 150, 300])
        XCTAssertEqual([9, 10].map { RetryPolicy().delay(afterAttempt: $0, retryAfter: nil, jitter: 1) }, [256, nil], "default: 10 attempts")
    }

    func testRetryAfterAndHTTPDate() {
        let now = 784_111_700.0
        let table: [(String, Double?)] = [
            ("120", 120), ("0", 0), ("  7\t", 7), ("Sun, 06 Nov 1994 08:49:37 GMT", 77), ("Sun, 06 Nov 1994 08:00:00 GMT", 0),
            ("-5", nil), ("1.5", nil), ("soon", nil), ("", nil),
        ]
        for (value, expected) in table {
            XCTAssertEqual(RetryPolicy.retryAfterSeconds(value, now: now), expected, value)
        }
        let dates: [(String, Int64?)] = [
            ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777), ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
            ("Thu, 29 Feb 2024 00:00:00 GMT", 1_709_164_800), ("Tue, 29 Feb 2000 12:00:00 GMT", 951_825_600),
            ("Fri, 01 Mar 2024 00:00:00 GMT", 1_709_251_200),
            ("Sun, 06 Nov 1994 08:49:37 UTC", nil), ("Sun, 06 nov 1994 08:49:37 GMT", nil), ("Sun, 32 Nov 1994 08:49:37 GMT", nil),
            ("Sun, 06 Nov 1994 24:00:00 GMT", nil), ("Sun, 06 Nov 1994 08:60:00 GMT", nil), ("Sun, 06 Nov 1994 08:49 GMT", nil),
            ("Sunday, 06-Nov-94 08:49:37 GMT", nil), ("Sun Nov  6 08:49:37 1994", nil), ("", nil),
        ]
        for (text, expected) in dates {
            XCTAssertEqual(HTTPDate.unixSeconds(text), expected, text)
        }
    }

    // MARK: JobQueue and ProgressCheckpoint

    func testQueueOrder() {
        let jobs = [
            job("a", 1, .low), job("b", 2, .normal), job("c", 3, .high), job("d", 4, .normal),
            job("e", 5, .high, .running), job("f", 6, .high, .deferred), job("g", 7, .high, .paused), job("h", 0, .normal),
            job("i", 8, .high, .completed),
        ]
        XCTAssertEqual(JobQueue.toStart(jobs.compactMap(JobQueue.Place.init), running: 0, limit: 10), ["c", "h", "b", "d", "a"])
        XCTAssertEqual(JobQueue.toStart(jobs.compactMap(JobQueue.Place.init), running: 1, limit: 3), ["c", "h"])
        XCTAssertEqual(JobQueue.toStart(jobs.reversed().compactMap(JobQueue.Place.init), running: 0, limit: 2), ["c", "h"])
        XCTAssertEqual(JobQueue.toStart(jobs.compactMap(JobQueue.Place.init), running: 3, limit: 3), [])
        XCTAssertEqual(JobQueue.toStart(jobs.compactMap(JobQueue.Place.init), running: 5, limit: 3), [])
        XCTAssertEqual(JobQueue.toStart([job("x", 1, .low, .failed)].compactMap(JobQueue.Place.init), running: 0, limit: 3), [])
    }

    /// The one-pass pick gives the first `free` jobs of the queue sorted, for queues of every shape.
    func testQueuePickIsTheSortedQueuesFirstJobs() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let places = (0..<Int.random(in: 0...40, using: &generator)).map { n in
                job("j\(n)", Int64.random(in: 0...1000, using: &generator) * 50 + Int64(n), Priority.allCases.randomElement(using: &generator)!)
            }.compactMap(JobQueue.Place.init)
            let sorted = places.sorted { ($0.priority, -$0.sequence) > ($1.priority, -$1.sequence) }.map(\.id)
            let limit = Int.random(in: 1...6, using: &generator)
            XCTAssertEqual(JobQueue.toStart(places, running: 0, limit: limit), Array(sorted.prefix(limit)))
        }
    }

    func testProgressCheckpoint() {
        let checkpoint = ProgressCheckpoint(intervalSeconds: 1, intervalBytes: 1000)
        let table: [(Int64, Double, Bool)] = [
            (0, 0, false), (0, 60, false), (1, 0.5, false), (999, 0.99, false), (1, 1, true), (1000, 0, true), (5000, 0.1, true),
        ]
        for (bytes, seconds, due) in table {
            XCTAssertEqual(checkpoint.isDue(bytesSince: bytes, secondsSince: seconds), due, "\(bytes) B, \(seconds) s")
        }
        XCTAssertEqual(ProgressCheckpoint(), ProgressCheckpoint(intervalSeconds: 1, intervalBytes: 8 * 1024 * 1024))
    }

    // MARK: TransferURL and OutputPath

    func testTransferURL() throws {
        let ok: [(String, String, String, Int?)] = [
            ("http://Mirror.EXAMPLE.org/pub/x.iso", "http", "mirror.example.org", nil),
            ("HTTPS://mirror.test:8443/x?y=1#z", "https", "mirror.test", 8443),
            ("http://[2001:DB8::1]:8080/x", "http", "2001:db8::1", 8080), ("http://[::1]/", "http", "::1", nil),
            ("http://192.0.2.1", "http", "192.0.2.1", nil), ("http://host:/x", "http", "host", nil), ("http://h:65535", "http", "h", 65535),
        ]
        for (text, scheme, host, port) in ok {
            let url = try TransferURL(text)
            XCTAssertEqual([url.scheme, url.host], [scheme, host], text)
            XCTAssertEqual(url.port, port, text)
        }
        let refused: [(String, String)] = [
            ("ftp://mirror.test/x", "only http and https are supported"),
            ("mirror.test/x", "expected http://HOST/… or https://HOST/…"), ("http:/mirror.test/x", "expected http://HOST/… or https://HOST/…"),
            ("http://user:pw@mirror.test/x", "credentials do not belong in URLs (use a netrc file)"),
            ("http://mirror.test/a b", "spaces, control or non-ASCII characters must be percent-encoded"),
            ("http://mirrör.test/", "spaces, control or non-ASCII characters must be percent-encoded"),
            ("http://mirror.test/\u{7f}", "spaces, control or non-ASCII characters must be percent-encoded"),
            ("http://mirror.test:0/", "bad port"), ("http://mirror.test:65536/", "bad port"), ("http://mirror.test:http/", "bad port"),
            ("http:///x", "no host"), ("http://:80/x", "no host"), ("http://[]/", "no host"),
            ("http://[::1/", "unterminated IPv6 literal"), ("http://[::1]x/", "unexpected text after the IPv6 literal"),
            ("http://mirror%2Etest/", "bad character in host"), ("http://[example.com]/", "brackets hold IPv6 addresses only"),
            ("http://mirror.test:+80/", "bad port"),
            ("http://" + String(repeating: "a", count: 8200), "longer than 8192 bytes"),
        ]
        for (text, why) in refused {
            XCTAssertThrowsError(try TransferURL(text), text) { error in
                XCTAssertEqual("\(error)", "invalid URL \"\(text.prefix(200))\": \(why)")
            }
        }
    }

    func testOutputPath() {
        let name200 = String(repeating: "n", count: 200)
        for path in ["/srv/x.iso", "/x", "/a//b", "/a/.hidden", "/a/..b", "/\(name200)"] {
            XCTAssertNoThrow(try OutputPath.validate(path), path)
        }
        let refused: [(String, String)] = [
            ("x.iso", "must be absolute"), ("", "must be absolute"), ("/srv/", "names a directory"), ("/", "names a directory"),
            ("/srv/../etc/passwd", "contains . or .. components"), ("/srv/./x", "contains . or .. components"),
            ("/srv/..", "contains . or .. components"), ("/srv/a\u{0}b", "contains NUL"),
            ("/" + name200 + "n", "file name longer than 200 bytes"),
            ("/" + String(repeating: "d/", count: 2048) + "x", "longer than PATH_MAX"),
        ]
        for (path, why) in refused {
            XCTAssertThrowsError(try OutputPath.validate(path), path) { error in
                XCTAssertEqual("\(error)", "invalid output path \"\(path.prefix(200))\": \(why)")
            }
        }
    }

    // MARK: Job

    func testJobBasics() {
        XCTAssertEqual(job("0123456789abcdef", 1, output: "/a/b/c.iso").partialPath, "/a/b/.c.iso.0123456789abcdef.part")
        XCTAssertEqual(job("00ff", 1, output: "/c.iso").partialPath, "/.c.iso.00ff.part")
        var fixed = FixedGenerator(values: [0, 0xff, .max, 0x0123_4567_89ab_cdef])
        XCTAssertEqual((0..<4).map { _ in Job.newID(using: &fixed) },
                       ["0000000000000000", "00000000000000ff", "ffffffffffffffff", "0123456789abcdef"])
        var random = SeededGenerator(seed: 42)
        let ids = (0..<200).map { _ in Job.newID(using: &random) }
        XCTAssertEqual(Set(ids).count, 200)
        for id in ids { XCTAssertTrue(id.count == 16 && id.allSatisfy { "0123456789abcdef".contains($0) }, id) }

        XCTAssertEqual(JobState.allCases.filter(\.isTerminal), [.completed, .failed, .cancelled])
        XCTAssertEqual([Priority.high, .low, .normal].sorted(), [.low, .normal, .high])
        let mine = job("1", 1)
        XCTAssertEqual([Owner(uid: 0, gid: 0), Owner(uid: 1000, gid: 5), Owner(uid: 1001, gid: 1000)].map { $0.mayControl(mine) },
                       [true, true, false])
        XCTAssertEqual([Validators(etag: "W/\"x\"", lastModified: "L", lastModifiedIsStrong: true), Validators(etag: "\"x\"", lastModified: "L"),
                        Validators(etag: "x")].map(\.ifRange), ["L", "\"x\"", nil])
        let fresh = job("1", 7, .high)
        XCTAssertEqual([fresh.state.rawValue, fresh.priority.rawValue, fresh.url], ["queued", "high", "http://mirror.test/x"])
        XCTAssertEqual(fresh.updated, fresh.created)
        XCTAssertNil(fresh.bytesTotal)
    }

    func testJobWireForm() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let fresh = job("0123456789abcdef", 3)
        let text = String(decoding: try encoder.encode(fresh), as: UTF8.self)
        XCTAssertEqual(text, #"{"allowInsecureAuth":false,"allowMetered":false,"attempts":0,"bytesReceived":0,"bytesTotal":null,"#
            + #""created":"2023-11-14T22:13:20.000000Z","etag":null,"id":"0123456789abcdef","kind":"download","lastChecked":null,"lastModified":null,"#
            + #""nextCheck":null,"output":"/srv/x.iso","priority":"normal","reason":null,"refreshEvery":null,"retryAt":null,"sequence":3,"sha256":null,"#
            + #""state":"queued","uid":1000,"updated":"2023-11-14T22:13:20.000000Z","url":"http://mirror.test/x"}"#)

        var full = fresh
        (full.state, full.allowMetered, full.attempts) = (.deferred, true, 2)
        full.changeDownload { $0.sha256 = String(repeating: "ab", count: 32) }
        (full.bytesMoved, full.bytesTotal, full.reason) = (123, 456, "deferred: \"quoted\"\n")
        full.changeDownload { $0.partial = Validators(etag: "\"e\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT") }
        (full.retryAt, full.updated) = (Timestamp(microseconds: 1_700_000_001_000_001), Timestamp(microseconds: 1_700_000_002_654_321))
        for original in [fresh, full] {
            let decoded = try JSONDecoder().decode(Job.self, from: encoder.encode(original))
            var expected = original
            expected.owner = Owner(uid: original.owner.uid, gid: 0)
            XCTAssertEqual(decoded, expected)
            XCTAssertNotEqual(decoded, original, "gid and groups are not on the wire")
        }
    }
}
