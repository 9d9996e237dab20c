import ReachdModel
import ReachdTransferModel
import XCTest

/// The offline cache as a private cache (RFC 9111, RFC 5861): what is kept, which request a stored answer
/// may serve, when a stale copy may stand in for an error.
final class CacheRulesTests: XCTestCase {
    private let now = Timestamp(microseconds: 1_000_000 * 1_000_000)

    private func seconds(_ n: Int64) -> Timestamp { Timestamp(microseconds: now.microseconds + n * 1_000_000) }

    func testVaryFieldsAreReadTotally() {
        let table: [(String?, [String], Bool, UInt)] = [
            (nil, [], false, #line),
            ("", [], false, #line),
            ("Accept-Encoding", ["accept-encoding"], false, #line),
            ("authorization, ACCEPT-encoding , Authorization", ["accept-encoding", "authorization"], false, #line),
            ("*", [], true, #line),
            ("Accept, *", ["accept"], true, #line),
            ("Accept, \"quoted\"", ["accept"], true, #line),
            ("a b", [], true, #line),
            (",,,", [], false, #line),
        ]
        for (header, fields, matchesNothing, line) in table {
            let vary = CacheVary(header)
            XCTAssertEqual(vary.fields, fields, header ?? "nil", line: line)
            XCTAssertEqual(vary.matchesNothing, matchesNothing, header ?? "nil", line: line)
        }
        let flood = CacheVary(String(repeating: "x-a, x-b, ", count: 100_000))
        XCTAssertLessThanOrEqual(flood.fields.count, 64)
        XCTAssertTrue(flood.matchesNothing, "names past the ones read might matter")
    }

    func testTheSelectingTextFollowsTheVariedFieldsOnly() {
        let vary = CacheVary("Authorization, Accept-Language")
        let alice = vary.selectingText(of: [("User-Agent", "a"), ("Authorization", "Basic YWxpY2U=")])
        let bob = vary.selectingText(of: [("User-Agent", "b"), ("authorization", "Basic Ym9i")])
        let aliceAgain = vary.selectingText(of: [("User-Agent", "other"), ("Authorization", "Basic YWxpY2U=")])
        XCTAssertNotEqual(alice, bob, "another credential is another variant")
        XCTAssertEqual(alice, aliceAgain, "a field the response does not vary on does not matter")
        XCTAssertEqual(alice, "accept-language: \nauthorization: Basic YWxpY2U=\n")
        XCTAssertEqual(CacheVary(nil).selectingText(of: [("Authorization", "x")]), "")
    }

    func testNoStoreAndVaryStarAreNotKept() {
        XCTAssertNil(CacheAdmission.refusal(CacheControl("max-age=60, private, public"), vary: CacheVary("Accept")))
        XCTAssertEqual(CacheAdmission.refusal(CacheControl("no-store"), vary: CacheVary(nil)), "the server forbids storing it (no-store)")
        XCTAssertEqual(CacheAdmission.refusal(CacheControl("max-age=60"), vary: CacheVary("*")),
                       "the server says it varies on everything (Vary: *)")
    }

    func testStaleIfErrorWindowStartsWhenTheCopyGoesStale() {
        let fresh = CacheFreshness(cacheControl: "max-age=60, stale-if-error=30", expires: nil, date: nil, now: now)
        XCTAssertEqual(fresh.freshUntil, seconds(60))
        XCTAssertEqual(fresh.staleIfErrorUntil, seconds(90))
        let staleAtOnce = CacheFreshness(cacheControl: "stale-if-error=30", expires: nil, date: nil, now: now)
        XCTAssertNil(staleAtOnce.freshUntil)
        XCTAssertEqual(staleAtOnce.staleIfErrorUntil, seconds(30))
        let bound = CacheFreshness(cacheControl: "max-age=60, stale-if-error=30, must-revalidate", expires: nil, date: nil, now: now)
        XCTAssertNil(bound.staleIfErrorUntil, "must-revalidate wins")
        let huge = CacheFreshness(cacheControl: "max-age=99999999999999, stale-if-error=99999999999999", expires: nil, date: nil, now: now)
        XCTAssertGreaterThan(huge.staleIfErrorUntil!, huge.freshUntil!)
    }

    func testAnErrorAnswerIsReportedUnlessTheRouteIsMeteredOrStaleIfErrorAllows() {
        let plain = CacheFreshness(freshUntil: seconds(-10))
        let allowing = CacheFreshness(freshUntil: seconds(-10), staleIfErrorUntil: seconds(20))
        let expired = CacheFreshness(freshUntil: seconds(-100), staleIfErrorUntil: seconds(-1))
        let strict = CacheFreshness(freshUntil: seconds(-10), mustRevalidate: true)
        func standIn(_ status: Int, _ copy: CacheFreshness?, metered: Bool = false, error: CacheControl = CacheControl(nil)) -> String? {
            CacheSource.standIn(status: status, errorDirectives: error, copy: copy, metered: metered, now: now)
        }
        XCTAssertNil(standIn(503, plain), "a 503 is reported, not hidden behind the stale copy")
        XCTAssertNil(standIn(404, plain))
        XCTAssertNil(standIn(503, nil), "nothing to stand in")
        XCTAssertEqual(standIn(503, allowing), "the server answered 503 and allows a stale copy then (stale-if-error)")
        XCTAssertNil(standIn(404, allowing), "stale-if-error covers 500, 502, 503 and 504 only")
        XCTAssertNil(standIn(500, expired), "past the window")
        XCTAssertEqual(standIn(502, plain, error: CacheControl("stale-if-error=60")),
                       "the server answered 502 and allows a stale copy then (stale-if-error)", "the error answer's own directive counts")
        XCTAssertNil(standIn(502, CacheFreshness(freshUntil: seconds(-100)), error: CacheControl("stale-if-error=60")))
        XCTAssertEqual(standIn(404, plain, metered: true), "the server answered 404 and the route is metered")
        XCTAssertNil(standIn(503, strict, metered: true), "must-revalidate: never served stale")
        XCTAssertNil(standIn(503, strict, error: CacheControl("stale-if-error=60")))
    }

    // MARK: Eviction (issue 22: empty bodies fill no state directory)

    private func entries(_ sizes: [Int64], uid: UInt32 = 1000) -> [CacheEviction.Entry] {
        sizes.enumerated().map { CacheEviction.Entry(uid: uid, key: "k\($0.offset)", size: $0.element, lastUsed: seconds(Int64($0.offset))) }
    }

    private func usage(_ entries: [CacheEviction.Entry]) -> CacheEviction.Usage {
        CacheEviction.Usage(entries: entries.count, bytes: entries.reduce(0) { $0 + $1.size })
    }

    func testBytesOverCapacityEvictTheLeastRecentlyUsed() {
        let oldestFirst = entries([400, 400, 400])
        let limits = { (capacity: Int64) in CacheEviction.Limits(capacity: capacity, entries: 100, entriesPerUser: 100) }
        XCTAssertEqual(CacheEviction.victims(oldestFirst: oldestFirst, usage: usage(oldestFirst), limits: limits(1000)).map(\.key), ["k0"])
        XCTAssertEqual(CacheEviction.victims(oldestFirst: oldestFirst, usage: usage(oldestFirst), limits: limits(300)).map(\.key), ["k0", "k1", "k2"])
        XCTAssertEqual(CacheEviction.victims(oldestFirst: oldestFirst, usage: usage(oldestFirst), limits: limits(1200)), [])
    }

    func testEmptyBodiesCountAsEntries() {
        let empty = entries(Array(repeating: 0, count: 7))
        let limits = CacheEviction.Limits(capacity: 1 << 20, entries: 5, entriesPerUser: 3)
        XCTAssertFalse(CacheEviction.isOver(CacheEviction.Usage(entries: 5, bytes: 0), limits: limits))
        XCTAssertTrue(CacheEviction.isOver(usage(empty), limits: limits), "7 empty bodies exceed 5 entries")
        XCTAssertEqual(CacheEviction.victims(oldestFirst: empty, usage: usage(empty), limits: limits).map(\.key), ["k0", "k1"])
        XCTAssertEqual(CacheEviction.userExcess(held: 7, limits: limits), 4)
        XCTAssertEqual(CacheEviction.userExcess(held: 3, limits: limits), 0)
        // Only the oldest part of the cache is at hand: as many as it takes, no more.
        XCTAssertEqual(CacheEviction.victims(oldestFirst: Array(empty.prefix(1)), usage: usage(empty), limits: limits).map(\.key), ["k0"])
    }

    func testEntriesAndBytesBothBind() {
        let mixed = entries([0, 900, 0, 0, 100])
        let limits = CacheEviction.Limits(capacity: 500, entries: 4, entriesPerUser: 10)
        XCTAssertEqual(CacheEviction.victims(oldestFirst: mixed, usage: usage(mixed), limits: limits).map(\.key), ["k0", "k1"],
                       "one entry too many, and 500 bytes too many")
    }

    // MARK: Layout (issue 22: the cache of the root-run version)

    func testOnlyTheSystemInstancesUnpassableDirectoriesAreMigrated() {
        XCTAssertTrue(CacheLayout.needsMigration(directoryMode: 0o40700, shared: true), "the root-run version's")
        XCTAssertFalse(CacheLayout.needsMigration(directoryMode: 0o40711, shared: true))
        XCTAssertFalse(CacheLayout.needsMigration(directoryMode: 0o40710, shared: true), "created under UMask=0027")
        XCTAssertFalse(CacheLayout.needsMigration(directoryMode: 0o40700, shared: false), "a user's own instance keeps 0700")
        XCTAssertEqual(CacheLayout.directoryMode(shared: true), 0o711)
        XCTAssertEqual(CacheLayout.bodyMode(shared: true), 0o644)
        XCTAssertEqual(CacheLayout.directoryMode(shared: false), 0o700)
        XCTAssertEqual(CacheLayout.bodyMode(shared: false), 0o600)
    }

    func testAMigrationKeepsTheBodiesEntriesNameAndRemovesTheRest() {
        let migration = CacheLayout.migration(
            of: "/var/cache/reachd-transfers/1000",
            names: ["0123abcd", ".0123abcd.77.tmp", "replaced"],
            entries: [("GET http://a/", "/var/cache/reachd-transfers/1000/0123abcd"), ("GET http://b/", "/var/cache/reachd-transfers/1000/gone"),
                      ("GET http://c/", "/elsewhere/0123abcd")])
        XCTAssertEqual(migration.moved, ["GET http://a/"])
        XCTAssertEqual(migration.missing, ["GET http://b/", "GET http://c/"])
        XCTAssertEqual(migration.leftovers, [".0123abcd.77.tmp", "replaced"])
    }

    func testBodyNamesAre128RandomBits() {
        var generator = SystemRandomNumberGenerator()
        let names = (0..<100).map { _ in CacheLayout.bodyName(using: &generator) }
        XCTAssertEqual(Set(names).count, 100)
        XCTAssertTrue(names.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }
}

/// Time deferred, by reason, for the metrics.
final class DeferralAccountingTests: XCTestCase {
    private func at(_ seconds: Int64) -> Timestamp { Timestamp(microseconds: seconds * 1_000_000) }

    func testAWaitIsCountedWhenItEndsUnderTheReasonItBeganWith() {
        var accounting = DeferralAccounting()
        XCTAssertNil(accounting.record(job: "a", state: .queued, reason: .other, at: at(0)))
        XCTAssertNil(accounting.record(job: "a", state: .deferred, reason: .metered, at: at(10)))
        XCTAssertNil(accounting.record(job: "a", state: .deferred, reason: .unreachable, at: at(20)), "still the same wait")
        XCTAssertEqual(accounting.waiting(at: at(25)).map(\.seconds), [15])
        let ended = accounting.record(job: "a", state: .running, reason: .other, at: at(40))
        XCTAssertEqual(ended?.reason, .metered)
        XCTAssertEqual(ended?.seconds, 30)
        XCTAssertTrue(accounting.waiting(at: at(50)).isEmpty)
        XCTAssertNil(accounting.record(job: "a", state: .completed, reason: .other, at: at(60)))
    }

    func testTheReasonComesFromTheRetryAndTheRoute() {
        var job = Job(id: "j", sequence: 1, spec: DownloadSpec(url: "http://a.test/f", output: "/tmp/f"),
                      owner: Owner(uid: 0, gid: 0), created: at(0))
        let metered = Verdict(target: "a.test", reachable: true, status: .wwan, metered: true, meteredReason: nil, interface: "wwan0",
                              flags: [.reachable], reason: nil, family: .ipv4, ipv4: .unreachable(.noRoute, ""), ipv6: .unreachable(.noRoute, ""))
        XCTAssertEqual(DeferralReason.of(job, verdict: nil), .unreachable)
        XCTAssertEqual(DeferralReason.of(job, verdict: metered), .metered)
        job.retryAt = at(5)
        XCTAssertEqual(DeferralReason.of(job, verdict: metered), .retry)
    }
}
