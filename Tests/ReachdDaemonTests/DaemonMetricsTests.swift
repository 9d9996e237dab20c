import NIOCore
import NIOEmbedded
import ReachdModel
import ReachdMonitor
import XCTest
@testable import ReachdDaemon

/// reachd's metric families in Prometheus's text format, from events fed by hand: no sockets, no kernel.
final class DaemonMetricsTests: XCTestCase {
    private func snapshot(eth0Carrier: Bool, wwan0: Bool = true) -> NetworkSnapshot {
        var links = [LinkInfo(index: 2, name: "eth0", flags: eth0Carrier ? [.up, .running, .lowerUp] : [.up], carrier: eth0Carrier)]
        if wwan0 { links.append(LinkInfo(index: 3, name: "wwan0", flags: [.up, .running, .lowerUp], carrier: true)) }
        return NetworkSnapshot(
            links: links,
            addresses: [InterfaceAddress(interfaceIndex: 2, address: IPAddress("192.0.2.2")!, prefixLength: 24),
                        InterfaceAddress(interfaceIndex: 3, address: IPAddress("198.51.100.2")!, prefixLength: 24)],
            defaultRoutes: [Route(family: .ipv4, nexthops: [Nexthop(interfaceIndex: eth0Carrier ? 2 : 3, gateway: IPAddress(eth0Carrier ? "192.0.2.1" : "198.51.100.1"))])]
        )
    }

    private func text(_ metrics: DaemonMetrics, resyncs: Int = 0, watched: Int = 0) -> [String] {
        String(decoding: metrics.render(resynchronisations: resyncs, watchedHosts: watched), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    func testTheVerdictItsChangesAndThePathInfo() {
        let metrics = DaemonMetrics()
        let hub = VerdictHub(engine: InternetVerdict())
        _ = hub.addObserver { metrics.verdictChanged($0) }
        hub.update(snapshot: snapshot(eth0Carrier: true))
        var lines = text(metrics)
        XCTAssertTrue(lines.contains("reachd_reachable 1.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_metered 0.0"))
        XCTAssertTrue(lines.contains("reachd_verdict_changes_total 0"), "the first verdict is no change")
        XCTAssertTrue(lines.contains("reachd_path_info{interface=\"eth0\",kind=\"wired\",metered_source=\"kind\",status=\"wired\"} 1.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_metered_state{state=\"guess-no\"} 1.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_metered_state{state=\"guess-yes\"} 0.0"))
        XCTAssertTrue(lines.contains("reachd_cost{level=\"unrestricted\"} 1.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_cost{level=\"fixed\"} 0.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_cost_flag{flag=\"roaming\"} 0.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_connectivity{state=\"unknown\"} 1.0"))
        XCTAssertTrue(lines.contains("reachd_connectivity{state=\"full\"} 0.0"))
        XCTAssertTrue(lines.contains("# TYPE reachd_verdict_changes_total counter"))
        XCTAssertTrue(lines.contains { $0.hasPrefix("# HELP reachd_metered ") })

        hub.update(snapshot: snapshot(eth0Carrier: false))
        lines = text(metrics)
        XCTAssertTrue(lines.contains("reachd_metered 1.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_verdict_changes_total 1"))
        XCTAssertTrue(lines.contains("reachd_path_info{interface=\"wwan0\",kind=\"wwan\",metered_source=\"kind\",status=\"wwan\"} 1.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_metered_state{state=\"guess-yes\"} 1.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_cost{level=\"fixed\"} 1.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_cost{level=\"unrestricted\"} 0.0"), "\(lines)")
        XCTAssertFalse(lines.contains { $0.hasPrefix("reachd_path_info{interface=\"eth0\"") }, "one path at a time")
        var abroad = snapshot(eth0Carrier: false)
        abroad.roaming["wwan0"] = .modemManager
        hub.update(snapshot: abroad)
        lines = text(metrics)
        XCTAssertTrue(lines.contains("reachd_cost{level=\"variable\"} 1.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_cost_flag{flag=\"roaming\"} 1.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_cost_flag{flag=\"overDataLimit\"} 0.0"), "\(lines)")
        let since = lines.first { $0.hasPrefix("reachd_seconds_since_last_change ") }.flatMap { Double($0.split(separator: " ")[1]) }
        XCTAssertNotNil(since)
        XCTAssertLessThan(since ?? 99, 60)
    }

    func testLinkFlapsDropsResyncsSubscribersHostsAndRejudging() {
        let metrics = DaemonMetrics()
        metrics.snapshot(snapshot(eth0Carrier: true))
        metrics.snapshot(snapshot(eth0Carrier: false))
        metrics.snapshot(snapshot(eth0Carrier: true))
        metrics.snapshot(snapshot(eth0Carrier: false, wwan0: false))
        metrics.clientDropped(reason: "events_unread")
        metrics.hostsRejudged(in: .milliseconds(3))
        metrics.subscribers.add(2, ordering: .relaxed)
        var lines = text(metrics, resyncs: 2, watched: 7)
        XCTAssertTrue(lines.contains("reachd_link_flaps_total{interface=\"eth0\"} 2"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_link_flaps_total{interface=\"wwan0\"} 1"), "a link that went away with carrier")
        XCTAssertTrue(lines.contains("reachd_clients_dropped_total{reason=\"events_unread\"} 1"))
        XCTAssertTrue(lines.contains("reachd_clients_dropped_total{reason=\"replies_unread\"} 0"))
        XCTAssertTrue(lines.contains("reachd_netlink_resyncs_total 2"))
        XCTAssertTrue(lines.contains("reachd_subscribers 2.0"))
        XCTAssertTrue(lines.contains("reachd_watched_hosts 7.0"))
        XCTAssertTrue(lines.contains("reachd_host_rejudge_duration_seconds_bucket{le=\"0.005\"} 1"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_host_rejudge_duration_seconds_bucket{le=\"0.001\"} 0"))
        lines = text(metrics, resyncs: 3, watched: 0)
        XCTAssertTrue(lines.contains("reachd_netlink_resyncs_total 3"), "counted once each")
        for name in ["process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds", "process_start_time_seconds"] {
            let value = lines.first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
            XCTAssertGreaterThan(value ?? -1, name == "process_cpu_seconds_total" ? -1 : 0, name)
        }
    }

    func testSubscribersAreCountedByTheRegistry() throws {
        let metrics = DaemonMetrics()
        let loop = EmbeddedEventLoop()
        let registry = SubscriberRegistry(eventLoop: loop, metrics: metrics) { _ in }
        let a = EmbeddedChannel(loop: loop), b = EmbeddedChannel(loop: loop)
        registry.add(a, targets: [("internet", 1)], reply: ByteBuffer())
        registry.add(a, targets: [("host:x", 1)], reply: ByteBuffer())
        registry.add(b, targets: [("internet", 1)], reply: ByteBuffer())
        XCTAssertEqual(metrics.subscribers.load(ordering: .relaxed), 2, "one per connection, whatever it watches")
        registry.remove(a)
        registry.remove(a)
        XCTAssertEqual(metrics.subscribers.load(ordering: .relaxed), 1)
    }

    func testBudgetsPerInterfaceAndAGoneBudgetLosesItsSeries() {
        let metrics = DaemonMetrics()
        let resets = Timestamp(rfc3339: "2026-12-01T00:00:00Z")!
        metrics.budgets([
            "wwan0": BudgetStatus(state: .approaching, usedBytes: 4_600_000_000, limitBytes: 5_000_000_000, period: "month", resetsAt: resets),
            "usb0": BudgetStatus(state: .below, usedBytes: 10, limitBytes: 200_000, period: "day", resetsAt: resets),
        ])
        var lines = text(metrics)
        XCTAssertTrue(lines.contains("reachd_budget_used_bytes{interface=\"wwan0\"} 4600000000.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_budget_limit_bytes{interface=\"wwan0\"} 5000000000.0"), "\(lines)")
        XCTAssertTrue(lines.contains("reachd_budget_used_bytes{interface=\"usb0\"} 10.0"), "\(lines)")
        metrics.budgets(["wwan0": BudgetStatus(state: .over, usedBytes: 5_000_000_000, limitBytes: 5_000_000_000, period: "month", resetsAt: resets)])
        lines = text(metrics)
        XCTAssertTrue(lines.contains("reachd_budget_used_bytes{interface=\"wwan0\"} 5000000000.0"), "\(lines)")
        XCTAssertFalse(lines.contains { $0.contains("usb0") }, "\(lines)")
    }
}

