import Foundation
import ReachdModel
import ReachdTransferModel
import XCTest

/// Header values a hostile server may send: every reader gives a value or nil, never a trap.
final class HostileHeaderTests: XCTestCase {
    private let now = Timestamp(microseconds: 784_111_777 * 1_000_000)

    func testCacheControlDirectives() {
        let table: [(String?, CacheControl, Int)] = [
            (nil, CacheControl(), #line),
            ("max-age=60", CacheControl(maxAge: 60), #line),
            ("MAX-AGE=60, must-revalidate", CacheControl(maxAge: 60, mustRevalidate: true), #line),
            ("max-age", CacheControl(), #line),
            ("max-age=", CacheControl(), #line),
            ("max-age=-1", CacheControl(), #line),
            ("max-age=1.5", CacheControl(), #line),
            ("max-age=\"30\"", CacheControl(maxAge: 30), #line),
            ("max-age=99999999999999999999999999", CacheControl(maxAge: 1 << 31), #line),
            ("max-age=0000000000000000000000000012", CacheControl(maxAge: 12), #line),
            ("max-age=60, max-age=10", CacheControl(maxAge: 10), #line),
            ("s-maxage=600", CacheControl(), #line),
            ("no-store", CacheControl(noStore: true), #line),
            ("no-cache", CacheControl(noCache: true), #line),
            ("no-cache=\"Set-Cookie, X-Foo\", max-age=5", CacheControl(maxAge: 5), #line),
            ("private, public, proxy-revalidate", CacheControl(), #line),
            ("stale-if-error=300", CacheControl(staleIfError: 300), #line),
            ("stale-if-error=300, stale-if-error=\"20\"", CacheControl(staleIfError: 20), #line),
            ("stale-if-error", CacheControl(), #line),
            ("stale-if-error=-3", CacheControl(), #line),
            (",,,  ,", CacheControl(), #line),
            ("=", CacheControl(), #line),
            ("=60", CacheControl(), #line),
            ("max age=60", CacheControl(), #line),
            ("\"max-age=60\"", CacheControl(), #line),
            ("max-age=\"60", CacheControl(), #line),
            ("max-age=\"6\\\"0\"", CacheControl(), #line),
            ("\u{0}\u{FFFF}é, no-store", CacheControl(noStore: true), #line),
        ]
        for (header, expected, line) in table {
            XCTAssertEqual(CacheControl(header), expected, header ?? "nil", line: UInt(line))
        }
        // A header of a million directives is read in bounded memory (the first 64 members count).
        let flood = String(repeating: "x, ", count: 1_000_000) + "no-store"
        XCTAssertFalse(CacheControl(flood).noStore)
    }

    func testFreshnessSaturatesAndCountsTheAge() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        let hostile: [(String?, String?, String?, String?)] = [
            ("max-age", nil, date, nil), ("max-age=99999999999999999999", nil, date, nil),
            (nil, "Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 01 Jan 0000 00:00:00 GMT", nil),
            (nil, "Mon, 01 Jan 0000 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", nil),
            ("max-age=60", nil, "Fri, 31 Dec 9999 23:59:59 GMT", "99999999999999999999999"),
            ("max-age=60", nil, "Sun, 06 Nov 1994 08:49:37 GMT", "-5"),
        ]
        for (cacheControl, expires, date, age) in hostile {
            let freshness = CacheFreshness(cacheControl: cacheControl, expires: expires, date: date, age: age, now: now)
            if let until = freshness.freshUntil { XCTAssertGreaterThan(until, now) }
        }
        let capped = CacheFreshness(cacheControl: "max-age=99999999999999999999", expires: nil, date: date, now: now)
        XCTAssertEqual(capped.freshUntil, Timestamp(microseconds: (784_111_777 + (1 << 31)) * 1_000_000))
        // Age counts against the lifetime; so does a Date in the past.
        XCTAssertEqual(CacheFreshness(cacheControl: "max-age=60", expires: nil, date: date, age: "50", now: now).freshUntil,
                       Timestamp(microseconds: (784_111_777 + 10) * 1_000_000))
        XCTAssertNil(CacheFreshness(cacheControl: "max-age=60", expires: nil, date: date, age: "60", now: now).freshUntil)
        XCTAssertNil(CacheFreshness(cacheControl: "max-age=60", expires: nil, date: "Sun, 06 Nov 1994 08:40:00 GMT", now: now).freshUntil)
        XCTAssertNil(CacheFreshness(cacheControl: "max-age=60, no-store", expires: nil, date: date, now: now).freshUntil)
        XCTAssertNil(CacheFreshness(cacheControl: nil, expires: "0", date: date, now: now).freshUntil)
    }

    func testDatesAreIMFFixdatesOnly() {
        let rejected = [
            "Sun, 06 Nov 99999999999999999 08:49:37 GMT", "Sun, 06 Nov 9223372036854775807 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, +6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 +8:49:37 GMT", "Sun, 06 Nov 1994  08:49:37 GMT", "Sun 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT ", "Sun, 06 Nov 1994 8:49:37: GMT", String(repeating: "Sun, ", count: 10_000),
        ]
        for text in rejected { XCTAssertNil(HTTPDate.unixSeconds(text), text) }
        XCTAssertEqual(HTTPDate.unixSeconds("Fri, 31 Dec 9999 23:59:59 GMT"), 253_402_300_799)
        XCTAssertEqual(HTTPDate.unixSeconds("Sat, 01 Jan 0000 00:00:00 GMT"), -62_167_219_200)
    }

    func testContentRangeAndRetryAfterAreTotal() {
        for text in ["bytes 0-99999999999999999999/100", "bytes 9223372036854775806-9223372036854775807/9223372036854775807",
                     "bytes 0-1/99999999999999999999", "bytes \u{0}-1/2", "bytes 1-2/3/4", "bytes 1--2/3"] {
            XCTAssertNil(ContentRange(text), text)
        }
        for text in ["99999999999999999999999", "-1", "1e9", "Fri, 31 Dec 9999 23:59:59 GMT"] {
            if let seconds = RetryPolicy.retryAfterSeconds(text, now: 0) { XCTAssertTrue(seconds.isFinite && seconds >= 0, text) }
        }
    }
}
