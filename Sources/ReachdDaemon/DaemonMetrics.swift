import Prometheus
import ReachdMetrics
import ReachdModel
import Synchronization

/// reachd's Prometheus metrics (docs/metrics.md): the internet verdict, its changes, link flaps, netlink
/// resynchronisations, subscribers, watched hosts, re-judging time, dropped clients and the process.
/// Events update them as they happen; counts kept elsewhere are read at each scrape.
public final class DaemonMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let process: ProcessMetrics
    private let reachable: Gauge
    private let metered: Gauge
    private let changes: Counter
    private let lastChange: Gauge
    private let sinceLastChange: Gauge
    private let resyncs: Counter
    private let subscriberGauge: Gauge
    private let watchedHosts: Gauge
    private let rejudge: DurationHistogram
    private let connectivity: [Connectivity: Gauge]
    private let meteredStates: [MeteredState: Gauge]
    private let costLevels: [CostLevel: Gauge]
    private let costFlags: [String: Gauge]
    private let linesToSockets: Counter
    private let linesThroughQueues: Counter
    private let state = Mutex(State())
    /// Subscribed connections, counted by the socket server's event loops.
    package let subscribers = Atomic<Int>(0)

    private struct State {
        var info: Gauge?
        var flaps = LinkFlaps()
        var countedResyncs = 0
        var lastChange: Timestamp?
        /// The data budgets' gauges, by interface: used and limit.
        var budgetGauges: [String: (used: Gauge, limit: Gauge)] = [:]
    }

    package init() {
        process = ProcessMetrics(registry: registry)
        reachable = registry.gauge("reachd_reachable", help: "1 when traffic to the internet can leave now, else 0.")
        metered = registry.gauge("reachd_metered", help: "1 when the link to the internet is metered, else 0.")
        changes = registry.counter("reachd_verdict_changes_total", help: "Changes of the internet verdict published.")
        lastChange = registry.gauge("reachd_last_change_timestamp_seconds", help: "When the internet verdict last changed (Unix seconds).")
        sinceLastChange = registry.gauge("reachd_seconds_since_last_change", help: "Seconds since the internet verdict last changed, at the scrape.")
        resyncs = registry.counter("reachd_netlink_resyncs_total", help: "Times the netlink caches were thrown away and dumped again.")
        subscriberGauge = registry.gauge("reachd_subscribers", help: "Socket connections subscribed to events.")
        watchedHosts = registry.gauge("reachd_watched_hosts", help: "Host targets watched by at least one client, each user's counted apart.")
        rejudge = registry.durationHistogram(
            "reachd_host_rejudge_duration_seconds", help: "Time to re-judge every watched host after a network change.",
            buckets: [.microseconds(100), .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(50),
                      .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5)])
        var connectivity: [Connectivity: Gauge] = [:]
        for state in Connectivity.allCases {
            connectivity[state] = registry.gauge("reachd_connectivity", help: "1 for the connectivity state now (unknown, none, portal, limited, full), 0 for the others.",
                                                 labels: [("state", state.rawValue)])
        }
        self.connectivity = connectivity
        var meteredStates: [MeteredState: Gauge] = [:]
        for state in MeteredState.allCases {
            meteredStates[state] = registry.gauge("reachd_metered_state", help: "1 for the metered state of the link to the internet now (yes, no, guess-yes, guess-no, unknown), 0 for the others.",
                                                  labels: [("state", state.rawValue)])
        }
        self.meteredStates = meteredStates
        let registry = self.registry
        costLevels = Dictionary(uniqueKeysWithValues: CostLevel.allCases.map { level in
            (level, registry.gauge("reachd_cost", help: "1 for the cost level of the path to the internet now (unrestricted, fixed, variable), 0 for the others (all 0 when not reachable).",
                                   labels: [("level", level.rawValue)]))
        })
        costFlags = Dictionary(uniqueKeysWithValues: ConnectionCost.allFlagNames.map { flag in
            (flag, registry.gauge("reachd_cost_flag", help: "1 when the cost of the path to the internet has the flag (roaming, approachingDataLimit, overDataLimit), else 0.",
                                  labels: [("flag", flag)]))
        })
        let lineHelp = "Lines written to subscribers (events and their subscribed replies): straight to the socket reachd accepted (path socket), or through the event loop's queue (path queue)."
        linesToSockets = registry.counter("reachd_subscriber_lines_total", help: lineHelp, labels: [("path", "socket")])
        linesThroughQueues = registry.counter("reachd_subscriber_lines_total", help: lineHelp, labels: [("path", "queue")])
        // The known reasons start at 0, so that a rate over them works before the first drop.
        for reason in ["events_unread", "replies_unread"] { _ = dropCounter(reason) }
    }

    /// A published change of the internet verdict.
    package func verdictChanged(_ stamped: StampedVerdict) {
        let verdict = stamped.verdict
        reachable.set(verdict.reachable ? 1.0 : 0.0)
        metered.set(verdict.metered ? 1.0 : 0.0)
        for (state, gauge) in connectivity { gauge.set(state == verdict.connectivity ? 1.0 : 0.0) }
        for (state, gauge) in meteredStates { gauge.set(state == verdict.meteredState ? 1.0 : 0.0) }
        let cost = verdict.cost
        for (level, gauge) in costLevels { gauge.set(level == cost?.level ? 1.0 : 0.0) }
        let flags = cost?.flagNames ?? []
        for (flag, gauge) in costFlags { gauge.set(flags.contains(flag) ? 1.0 : 0.0) }
        if stamped.sequence > 1 { changes.increment() }
        lastChange.set(Double(stamped.timestamp.microseconds) / 1e6)
        let info = registry.gauge("reachd_path_info", help: "1 for the path to the internet now: its interface, interface kind, status and what decided whether it is metered.",
                                  labels: [("interface", verdict.interface ?? ""), ("kind", (verdict.family == .ipv6 ? verdict.ipv6 : verdict.ipv4).kind?.rawValue ?? ""),
                                           ("metered_source", verdict.meteredSource?.rawValue ?? ""), ("status", verdict.status.rawValue)])
        info.set(1.0)
        let old = state.withLock { state -> Gauge? in
            defer { state.info = info; state.lastChange = stamped.timestamp }
            return state.info
        }
        if let old, old !== info { registry.unregisterGauge(old) }
    }

    /// A netlink snapshot: carrier losses count as flaps of their interface. (The registry hands back the
    /// counter it already has for a label set.)
    package func snapshot(_ snapshot: NetworkSnapshot) {
        for name in state.withLock({ $0.flaps.record(snapshot) }) {
            registry.counter("reachd_link_flaps_total", help: "Carrier losses per interface (beyond 64 names: other).",
                             labels: [("interface", name)]).increment()
        }
    }

    /// Lines written to subscribers: `direct` straight to their sockets, `queued` through their channels' queues.
    package func subscriberLinesWritten(direct: Int, queued: Int) {
        if direct > 0 { linesToSockets.increment(by: Int64(direct)) }
        if queued > 0 { linesThroughQueues.increment(by: Int64(queued)) }
    }

    /// A client closed by the daemon; `reason`: `events_unread` (a subscriber past its queue bound) or
    /// `replies_unread` (a client that does not read its replies).
    package func clientDropped(reason: String) { dropCounter(reason).increment() }

    private func dropCounter(_ reason: String) -> Counter {
        registry.counter("reachd_clients_dropped_total", help: "Socket clients the daemon closed, by reason.", labels: [("reason", reason)])
    }

    package func hostsRejudged(in duration: Duration) { rejudge.record(duration) }

    /// The data budgets' standings, by interface, read at each scrape; a link that lost its budget loses its gauges.
    package func budgets(_ statuses: [String: BudgetStatus]) {
        let gone = state.withLock { state -> [(used: Gauge, limit: Gauge)] in
            var gone: [(used: Gauge, limit: Gauge)] = []
            for (interface, gauges) in state.budgetGauges where statuses[interface] == nil {
                gone.append(gauges)
                state.budgetGauges[interface] = nil
            }
            for (interface, status) in statuses {
                let gauges = state.budgetGauges[interface] ?? (
                    used: registry.gauge("reachd_budget_used_bytes", help: "Bytes the interface's data budget counted in its period.",
                                         labels: [("interface", interface)]),
                    limit: registry.gauge("reachd_budget_limit_bytes", help: "The byte limit of the interface's data budget.",
                                          labels: [("interface", interface)])
                )
                gauges.used.set(Double(status.usedBytes))
                gauges.limit.set(Double(status.limitBytes))
                state.budgetGauges[interface] = gauges
            }
            return gone
        }
        for gauges in gone {
            registry.unregisterGauge(gauges.used)
            registry.unregisterGauge(gauges.limit)
        }
    }

    /// The exposition, with the counts read now.
    package func render(resynchronisations: Int, watchedHosts watched: Int) -> [UInt8] {
        process.update()
        subscriberGauge.set(Double(subscribers.load(ordering: .relaxed)))
        watchedHosts.set(Double(watched))
        let (newResyncs, last) = state.withLock { state -> (Int, Timestamp?) in
            defer { state.countedResyncs = max(state.countedResyncs, resynchronisations) }
            return (resynchronisations - state.countedResyncs, state.lastChange)
        }
        if newResyncs > 0 { resyncs.increment(by: Int64(newResyncs)) }
        if let last { sinceLastChange.set(Double(Timestamp.now().microseconds - last.microseconds) / 1e6) }
        return registry.emitToBuffer()
    }
}
