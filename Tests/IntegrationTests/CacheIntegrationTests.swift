import Foundation
import ReachdClient
import ReachdProtocol
import ReachdTransferModel
import XCTest

/// `reachctl fetch` through reachd-transfers' offline cache, against reachd-testserver in the peer namespace.
final class CacheIntegrationTests: XCTestCase {
    private var lab: TransferLab!

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    private var config = ""

    /// `cache`: more `[cache]` settings.
    private func start(capacity: Int = 256 << 20, cache: String = "") throws {
        lab = try TransferLab()
        try lab.startTestServer()
        config = "[downloads]\nmetered_threshold = 1048576\n[cache]\ncapacity_bytes = \(capacity)\n" + cache
        try lab.startDaemon(config: config)
    }

    /// The bodies in a uid's cache directory (not the temporaries of fetches under way).
    private func bodies(of uid: UInt32) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: lab.cacheDirectory + "/\(uid)").filter { !$0.hasPrefix(".") }
    }

    private func fetch(_ url: String, user: String? = nil, groups: [UInt32]? = nil) throws -> (status: Int32, sum: String, err: String) {
        try lab.fetch(url, user: user, groups: groups)
    }

    /// Takes both routes away and waits until the daemon has seen it.
    private func unreachable() throws {
        try lab.eth0Down()
        try lab.lab.ip("route del default dev wwan0")
        try lab.waitForLoggedVerdict("unreachable")
    }

    func testNetworkWhenUnmeteredCacheWhenMeteredAndLargeOrUnreachable() throws {
        try start()
        let big = try lab.serve("big.bin", bytes: 2_000_000)
        let small = try lab.serve("small.bin", bytes: 10_000, seed: 2)
        XCTAssertEqual(try fetch(lab.url("big.bin")).sum, big)
        XCTAssertEqual(try fetch(lab.url("small.bin")).sum, small)
        XCTAssertEqual(lab.gets("big.bin", atLeast: 1).count, 1)

        try lab.eth0Down()
        try lab.waitForLoggedVerdict("wwan")
        let cached = try fetch(lab.url("big.bin"))
        XCTAssertEqual(cached.status, 0)
        XCTAssertEqual(cached.sum, big)
        XCTAssertTrue(cached.err.hasPrefix("reachctl: from the cache, "), cached.err)
        XCTAssertTrue(cached.err.contains("old: the route to mirror.test is metered (wwan0) and the body (2000000 bytes) exceeds 1048576"), cached.err)
        XCTAssertEqual(lab.gets("big.bin", atLeast: 1).count, 1, "no request over the metered route")
        let smallAgain = try fetch(lab.url("small.bin"))
        XCTAssertEqual(smallAgain.err, "", "a small body comes from the network even over a metered route")
        XCTAssertEqual(lab.gets("small.bin", atLeast: 2).count, 2)

        try lab.lab.ip("route del default dev wwan0")
        try lab.waitForLoggedVerdict("unreachable")
        let offline = try fetch(lab.url("small.bin"))
        XCTAssertEqual(offline.sum, small)
        XCTAssertTrue(offline.err.contains("old: mirror.test is not reachable"), offline.err)
        let missing = try fetch(lab.url("never.bin"))
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.err.contains("not cached, and mirror.test is not reachable"), missing.err)
    }

    func testFreshEntriesNeedNoRequestAndStaleOnesAreRevalidated() throws {
        try start()
        let sum = try lab.serve("f.bin", bytes: 50_000)
        XCTAssertEqual(try fetch(lab.url("f.bin?cache-control=max-age=60")).sum, sum)
        let fresh = try fetch(lab.url("f.bin?cache-control=max-age=60"))
        XCTAssertEqual(fresh.sum, sum)
        XCTAssertTrue(fresh.err.contains("fresh (the server allows it until"), fresh.err)
        XCTAssertEqual(lab.gets("f.bin", atLeast: 1).count, 1)

        XCTAssertEqual(try fetch(lab.url("f.bin")).sum, sum)
        let revalidated = try fetch(lab.url("f.bin"))
        XCTAssertEqual(revalidated.sum, sum)
        XCTAssertEqual(revalidated.err, "", "revalidated with the server: not 'from the cache'")
        let last = try XCTUnwrap(lab.gets("f.bin", atLeast: 3).last)
        XCTAssertEqual(last["status"] as? Int, 304)
        XCTAssertEqual(last["bodyBytes"] as? Int, 0)
        XCTAssertNotNil(last["ifNoneMatch"] as? String)
    }

    func testMustRevalidateIsNotServedStale() throws {
        try start()
        try lab.serve("m.bin", bytes: 1000)
        XCTAssertEqual(try fetch(lab.url("m.bin?cache-control=must-revalidate")).status, 0)
        try unreachable()
        let refused = try fetch(lab.url("m.bin?cache-control=must-revalidate"))
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.err.contains("the server demands revalidation (must-revalidate)"), refused.err)
    }

    func testLeastRecentlyUsedEntriesAreEvictedToStayUnderCapacity() throws {
        try start(capacity: 1_000_000)
        for name in ["a", "b", "c"] { try lab.serve(name + ".bin", bytes: 400_000, seed: UInt64(name.unicodeScalars.first!.value)) }
        _ = try fetch(lab.url("a.bin"))
        _ = try fetch(lab.url("b.bin"))
        _ = try fetch(lab.url("a.bin"))
        _ = try fetch(lab.url("c.bin"))
        // Eviction runs after the fetch has been answered.
        let directory = lab.lab.directory + "/cache/0"
        func cached() throws -> (bodies: [String], total: Int) {
            let bodies = try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasPrefix(".") }
            return (bodies, try bodies.reduce(0) { $0 + ((try FileManager.default.attributesOfItem(atPath: directory + "/" + $1)[.size] as? Int) ?? 0) })
        }
        let (bodies, total) = try waited(for: cached, until: { $0.total <= 1_000_000 })
        XCTAssertEqual(bodies.count, 2)
        XCTAssertLessThanOrEqual(total, 1_000_000)
        try unreachable()
        XCTAssertEqual(try fetch(lab.url("a.bin")).status, 0, "used recently: kept")
        XCTAssertEqual(try fetch(lab.url("c.bin")).status, 0, "newest: kept")
        XCTAssertEqual(try fetch(lab.url("b.bin")).status, 1, "least recently used: evicted")
    }

    func testConcurrentFetchesOfOneURLShareOneRequest() throws {
        try start()
        let sum = try lab.serve("slow.bin", bytes: 600_000)
        let url = lab.url("slow.bin?rate=600000")
        let out = lab.lab.directory + "/concurrent"
        try lab.lab.run("for n in 0 1 2 3; do \(NetLab.binary("reachctl")) fetch '\(url)' --output \(out)$n "
            + "--transfers-socket \(lab.socketPath) & done; wait")
        XCTAssertEqual(try (0..<4).map { try lab.sha256(out + "\($0)") }, [sum, sum, sum, sum])
        XCTAssertEqual(lab.gets("slow.bin", atLeast: 1).count, 1)
    }

    func testEntriesBelongToOneUser() throws {
        try start()
        let sum = try lab.serve("u.bin", bytes: 20_000)
        XCTAssertEqual(try fetch(lab.url("u.bin")).sum, sum)
        // A member of the system instance's group: an entry of their own, never root's.
        let members = try fetch(lab.url("u.bin"), user: "nobody", groups: [lab.daemonGID])
        XCTAssertEqual(members.sum, sum, members.err)
        XCTAssertEqual(lab.gets("u.bin", atLeast: 2).count, 2, "nobody was not served root's entry")
        // The system instance cannot hand files over: a body is readable by name only, a random one, in a
        // directory others may pass through but not list.
        let directory = lab.cacheDirectory + "/65534"
        var info = stat()
        XCTAssertEqual(stat(directory, &info), 0)
        XCTAssertEqual(info.st_uid, lab.daemonUID)
        XCTAssertEqual(info.st_mode & 0o777, 0o711)
        XCTAssertThrowsError(try lab.lab.run("setpriv --reuid=nobody --regid=nogroup --clear-groups ls \(directory)"), "not listable")
        let body = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: directory).first)
        XCTAssertEqual(body.count, 32, "a 128-bit name: \(body)")
        XCTAssertNotEqual(try FileManager.default.contentsOfDirectory(atPath: lab.cacheDirectory + "/0").first, body, "not derived from the URL")
        XCTAssertEqual(stat(directory + "/" + body, &info), 0)
        XCTAssertEqual(info.st_uid, lab.daemonUID)
        XCTAssertEqual(info.st_mode & 0o777, 0o644)
    }

    /// Empty bodies are entries too: a client fetching `?0`, `?1`, … keeps at most `max_entries_per_user` of
    /// them, and the cache at most `max_entries`, the least recently used going first (issue 22).
    func testEntryBoundsHoldForEmptyBodies() throws {
        try start(cache: "max_entries = 5\nmax_entries_per_user = 3\n")
        try lab.serve("empty.bin", bytes: 0)
        for n in 0..<6 { XCTAssertEqual(try fetch(lab.url("empty.bin?\(n)")).status, 0) }
        // Eviction runs after the fetch has been answered.
        XCTAssertEqual(try waited(for: { try self.bodies(of: 0) }, until: { $0.count <= 3 }).count, 3)
        for n in 0..<3 { XCTAssertEqual(try fetch(lab.url("empty.bin?n\(n)"), user: "nobody", groups: [lab.daemonGID]).status, 0) }
        let counts = try waited(for: { (try self.bodies(of: 0).count, try self.bodies(of: 65534).count) }, until: { $0.0 + $0.1 <= 5 })
        XCTAssertEqual(counts.0, 2, "root's least recently used entry went for the cache's bound")
        XCTAssertEqual(counts.1, 3)
        try unreachable()
        XCTAssertEqual(try fetch(lab.url("empty.bin?5")).status, 0, "root's newest entry is kept")
        XCTAssertEqual(try fetch(lab.url("empty.bin?3")).status, 1, "root's oldest entries are gone")
    }

    /// The root-run version left each uid's bodies in a 0700 directory, 0600 (the upgrade hands them to the
    /// daemon's user, modes unchanged): at start the system instance brings them to its layout, and a user's
    /// cached copies open again (issue 22).
    func testCacheDirectoriesOfTheRootRunVersionAreMigratedAtStart() throws {
        try start()
        let user = try lab.makeUser("c")
        let sum = try lab.serve("old.bin", bytes: 30_000)
        let url = lab.url("old.bin?cache-control=max-age=3600")
        XCTAssertEqual(try fetch(url, user: user.name, groups: [lab.daemonGID]).sum, sum)
        let directory = lab.cacheDirectory + "/\(user.uid)"
        let before = try XCTUnwrap(try bodies(of: user.uid).first)
        lab.stopDaemon()
        XCTAssertEqual(chmod(directory, 0o700), 0)
        XCTAssertEqual(chmod(directory + "/" + before, 0o600), 0)
        XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/.\(before).1234.tmp", contents: Data("left over".utf8)))

        try lab.startDaemon(config: config)
        let again = try fetch(url, user: user.name, groups: [lab.daemonGID])
        XCTAssertEqual(again.status, 0, again.err)
        XCTAssertEqual(again.sum, sum)
        XCTAssertTrue(again.err.contains("fresh"), "served from the cache: \(again.err)")
        XCTAssertEqual(lab.gets("old.bin", atLeast: 1).count, 1)
        var info = stat()
        XCTAssertEqual(stat(directory, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o711)
        let after = try FileManager.default.contentsOfDirectory(atPath: directory)
        XCTAssertEqual(after.count, 1, "the leftover is removed: \(after)")
        XCTAssertNotEqual(after.first, before, "a new name: the old one may have been derived from the URL")
        XCTAssertEqual(stat(directory + "/" + (after.first ?? ""), &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o644)
    }
}
