import Foundation
import ReachdModel
import ReachdTransferModel
import XCTest

final class OfflineCacheTests: XCTestCase {
    private let now = Timestamp(microseconds: 784_111_777 * 1_000_000)

    func testFreshness() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        let maxAge = CacheFreshness(cacheControl: "public, max-age=60", expires: nil, date: date, now: now)
        XCTAssertEqual(maxAge.freshUntil, Timestamp(microseconds: (784_111_777 + 60) * 1_000_000))
        XCTAssertTrue(maxAge.isFresh(at: now))
        XCTAssertFalse(maxAge.isFresh(at: Timestamp(microseconds: now.microseconds + 61_000_000)))
        let expires = CacheFreshness(cacheControl: nil, expires: "Sun, 06 Nov 1994 08:50:37 GMT", date: date, now: now)
        XCTAssertEqual(expires.freshUntil, Timestamp(microseconds: (784_111_777 + 60) * 1_000_000))
        XCTAssertTrue(CacheFreshness(cacheControl: "max-age=0, must-revalidate", expires: nil, date: nil, now: now).mustRevalidate)
        XCTAssertNil(CacheFreshness(cacheControl: "no-cache, max-age=60", expires: nil, date: nil, now: now).freshUntil)
        XCTAssertNil(CacheFreshness(cacheControl: nil, expires: "garbage", date: nil, now: now).freshUntil)
    }

    func testSourceDecisions() {
        var wired = Verdict(target: "h.test", reachable: true, status: .wired, metered: false, meteredReason: nil, interface: "eth0",
                            flags: [.reachable], reason: nil, family: .ipv4, ipv4: .unreachable(.noRoute, ""), ipv6: .unreachable(.noRoute, ""))
        wired.addresses = []
        var metered = wired
        metered.metered = true
        metered.interface = "wwan0"
        var down = wired
        down.reachable = false
        down.reason = "no route"
        let fresh = CacheFreshness(freshUntil: Timestamp(microseconds: now.microseconds + 1), mustRevalidate: false)
        let stale = CacheFreshness(freshUntil: nil, mustRevalidate: false)
        let strict = CacheFreshness(freshUntil: nil, mustRevalidate: true)
        func decide(_ verdict: Verdict?, _ size: Int64?, _ freshness: CacheFreshness?) -> CacheSource {
            CacheSource.decide(host: "h.test", verdict: verdict, cachedSize: size, freshness: freshness, threshold: 100, now: now)
        }
        XCTAssertEqual(decide(down, 10, fresh), .cache(reason: "fresh (the server allows it until \(fresh.freshUntil!))"))
        XCTAssertEqual(decide(wired, 1000, stale), .network(limit: nil))
        XCTAssertEqual(decide(wired, nil, nil), .network(limit: nil))
        XCTAssertEqual(decide(metered, 50, stale), .network(limit: 100))
        XCTAssertEqual(decide(metered, nil, nil), .network(limit: 100))
        XCTAssertEqual(decide(metered, 1000, stale), .cache(reason: "the route to h.test is metered (wwan0) and the body (1000 bytes) exceeds 100"))
        XCTAssertEqual(decide(metered, 1000, strict), .network(limit: 100))
        XCTAssertEqual(decide(down, 10, stale), .cache(reason: "h.test is not reachable (no route)"))
        XCTAssertEqual(decide(down, nil, nil), .fail(reason: "not cached, and h.test is not reachable (no route)"))
        XCTAssertEqual(decide(down, 10, strict),
                       .fail(reason: "the cached copy is stale and the server demands revalidation (must-revalidate); h.test is not reachable (no route)"))
        XCTAssertEqual(decide(nil, nil, nil), .fail(reason: "not cached, and h.test is not reachable"))
    }

    func testKeysAndEviction() {
        XCTAssertEqual(CacheKey.key(method: "get", url: "HTTP://Mirror.TEST:80/a?b=1#frag"), "GET http://mirror.test/a?b=1")
        XCTAssertEqual(CacheKey.key(method: "GET", url: "https://m.test:8443"), "GET https://m.test:8443/")
        XCTAssertEqual(CacheKey.key(method: "GET", url: "https://m.test?q"), "GET https://m.test/?q")
        XCTAssertEqual(CacheKey.key(method: "GET", url: "http://[2001:db8::1]:80/x"), "GET http://[2001:db8::1]/x")
        XCTAssertNil(CacheKey.key(method: "GET", url: "ftp://m.test/"))
    }
}
