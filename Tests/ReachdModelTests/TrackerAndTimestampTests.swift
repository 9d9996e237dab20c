import ReachdModel
import XCTest

final class TrackerAndTimestampTests: XCTestCase {
    func testTrackerPublishesOnlyChanges() {
        let engine = InternetVerdict()
        let down = engine.verdict(for: NetworkSnapshot())
        let up = engine.verdict(for: NetworkSnapshot(
            links: [Fixture.link(2, "eth0")], addresses: [Fixture.v4(2, "192.0.2.2")],
            defaultRoutes: [Fixture.defaultRoute(via: "192.0.2.1", dev: 2)]))
        var tracker = VerdictTracker()
        XCTAssertEqual(tracker.record(down, at: Timestamp(microseconds: 1))?.sequence, 1)
        XCTAssertNil(tracker.record(down, at: Timestamp(microseconds: 2)))
        let second = tracker.record(up, at: Timestamp(microseconds: 3))
        XCTAssertEqual(second?.sequence, 2)
        XCTAssertEqual(second?.timestamp, Timestamp(microseconds: 3))
        XCTAssertNil(tracker.record(up, at: Timestamp(microseconds: 4)))
        XCTAssertEqual(tracker.record(down, at: Timestamp(microseconds: 5))?.sequence, 3)
    }

    func testTimestampFormatsAndParsesRFC3339() {
        let time = Timestamp(microseconds: 1_795_319_522_123_456)
        XCTAssertEqual(time.description, "2026-11-22T03:52:02.123456Z")
        XCTAssertEqual(Timestamp(rfc3339: time.description), time)
        XCTAssertEqual(Timestamp(rfc3339: "2026-11-22T04:52:02.123456+01:00"), time)
        XCTAssertEqual(Timestamp(rfc3339: "1970-01-01T00:00:00Z"), Timestamp(microseconds: 0))
        XCTAssertEqual(Timestamp(microseconds: -1).description, "1969-12-31T23:59:59.999999Z")
        XCTAssertEqual(Timestamp(microseconds: -30_636_384_833_000_042).description, "0999-03-04T05:06:06.999958Z")
        var bytes = Array("t=".utf8)
        time.append(to: &bytes)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), "t=2026-11-22T03:52:02.123456Z")
        XCTAssertNil(Timestamp(rfc3339: "2026-11-22 03:52:02Z"))
        XCTAssertNil(Timestamp(rfc3339: "yesterday"))
    }

    func testIPAddressText() {
        XCTAssertEqual(IPAddress("192.0.2.1")?.description, "192.0.2.1")
        XCTAssertEqual(IPAddress("2001:0db8:0:0:0:0:0:1")?.description, "2001:db8::1")
        XCTAssertEqual(IPAddress("::1")?.family, .ipv6)
        XCTAssertNil(IPAddress("192.0.2.256"))
        XCTAssertNil(IPAddress(bytes: [1, 2, 3]))
    }

    func testSummary() {
        let wwan = InternetVerdict().verdict(for: NetworkSnapshot(
            links: [Fixture.link(4, "wwan0")], addresses: [Fixture.v4(4, "203.0.113.2")],
            defaultRoutes: [Fixture.defaultRoute(via: "203.0.113.1", dev: 4)]))
        XCTAssertEqual(wwan.summary, "reachable via WWAN (wwan0), metered (interface kind wwan)")
        XCTAssertEqual(InternetVerdict().verdict(for: NetworkSnapshot()).summary, "not reachable: no IPv4 default route")
        var captive = wwan
        captive.captivePortal = CaptivePortal(apiURL: "https://portal.test/api", status: CaptivePortalStatus(captive: true))
        XCTAssertEqual(captive.summary, "reachable via WWAN (wwan0), metered (interface kind wwan), behind a captive portal (https://portal.test/api)")
        captive.captivePortal?.status = CaptivePortalStatus(captive: false)
        XCTAssertEqual(captive.summary, wwan.summary)
    }
}

/// Carrier losses per interface, with a bounded set of names.
final class LinkFlapsTests: XCTestCase {
    private func snapshot(_ links: [(String, Bool)]) -> NetworkSnapshot {
        NetworkSnapshot(links: links.enumerated().map { index, link in
            LinkInfo(index: Int32(index + 2), name: link.0, flags: link.1 ? [.up, .running, .lowerUp] : [.up], carrier: link.1)
        } + [LinkInfo(index: 1, name: "lo", flags: [.up, .running, .loopback], carrier: true)])
    }

    func testCarrierLossesAreCountedOncePerLoss() {
        var flaps = LinkFlaps()
        XCTAssertEqual(flaps.record(snapshot([("eth0", true), ("wlan0", false)])), [])
        XCTAssertEqual(flaps.record(snapshot([("eth0", false), ("wlan0", true)])), ["eth0"])
        XCTAssertEqual(flaps.record(snapshot([("eth0", false), ("wlan0", true)])), [], "no change, no flap")
        XCTAssertEqual(flaps.record(snapshot([("eth0", true)])), ["wlan0"], "a link that went away with carrier")
    }

    func testNamesPastTheLimitCountAsOther() {
        var flaps = LinkFlaps(limit: 2)
        let up = snapshot([("veth1", true), ("veth2", true), ("veth3", true)])
        _ = flaps.record(up)
        XCTAssertEqual(flaps.record(snapshot([])), ["other", "veth1", "veth2"])
    }
}
