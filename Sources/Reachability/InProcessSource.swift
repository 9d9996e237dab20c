import Logging
import ReachdConfig
import ReachdModel
import ReachdMonitor
import Synchronization

/// The `.netlink` source: the daemons' own judging, in this process (`NetworkView`: the netlink watcher joined
/// with NetworkManager's metered flags when NetworkManager is on the system bus, the internet verdict, and
/// `HostMonitor` for a host target: resolve, route, judge, resolve again after the network changed).
final class InProcessSource: Sendable {
    private let network: NetworkView
    private let stopped = Atomic<Bool>(false)
    /// The sequence of the host verdict delivered last (HostMonitor's numbering).
    private let latestHostSequence = Mutex<UInt64>(0)

    /// Starts judging `target` in the calling thread's network namespace; `deliver` gets the first verdict
    /// before this returns, then every change, until `stop`.
    init(target: ReachabilityMonitor.Target, configuration: Configuration, sysfsRoot: String,
         deliver: @escaping @Sendable (Verdict) -> Void) throws {
        // Notices and worse only: an app does not want the daemons' line per verdict in its log.
        var logger = Logger(label: "reachability")
        logger.logLevel = .notice
        network = try NetworkView(configuration: configuration, watcher: .init(sysfsRoot: sysfsRoot), networkManager: .system, logger: logger)
        do {
            try begin(target, deliver: deliver)
        } catch {
            stop()
            throw error
        }
    }

    /// Hands the verdicts for `target` to `deliver` and starts the watcher.
    private func begin(_ target: ReachabilityMonitor.Target, deliver: @escaping @Sendable (Verdict) -> Void) throws {
        switch target {
        case .internet:
            _ = network.hub.addObserver { [weak self] stamped in
                if let self, !self.stopped.load(ordering: .relaxed) { deliver(stamped.verdict) }
            }
            try network.start()
        case .host(let host):
            network.hosts.setObserver { [weak self] verdicts in
                for stamped in verdicts where stamped.verdict.target == host { self?.deliverInOrder(stamped, to: deliver) }
            }
            try network.start()
            deliverInOrder(network.hosts.watchResolvingHere(host), to: deliver)
        }
    }

    /// HostMonitor numbers each host's verdicts: a change published while the first verdict was on its way is
    /// not undone by it.
    private func deliverInOrder(_ stamped: StampedVerdict, to deliver: @Sendable (Verdict) -> Void) {
        let newer = latestHostSequence.withLock { last in
            defer { last = max(last, stamped.sequence) }
            return stamped.sequence > last
        }
        if newer, !stopped.load(ordering: .relaxed) { deliver(stamped.verdict) }
    }

    /// Stops judging: nothing is delivered after this returns. The resolver's threads end in the background.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        network.stopWatching()
        let network = self.network
        Task.detached { await network.stop() }
    }
}
