import Logging
import ReachdConfig
import ReachdModel
import ReachdNetlink

/// The network as reachd judges it, shared by reachd and reachd-transfers: the netlink watcher's
/// snapshots, joined with NetworkManager's metered flags, feed the internet verdict (`hub`) and the
/// watched hosts (`hosts`).
package final class NetworkView: Sendable {
    package let hub: VerdictHub
    package let hosts: HostMonitor
    package let resolver: HostResolver
    private let watcher: NetlinkWatcher
    private let manager: NetworkManagerMetered?
    private let merger: SnapshotMerger
    private let metrics: DaemonMetrics?

    /// `checking`: a connectivity check will report into the hub.
    package init(configuration: Configuration, checking: Bool = false, watcher options: NetlinkWatcher.Options,
                 networkManager: BusService.Bus, metrics: DaemonMetrics? = nil, logger: Logger) throws {
        let hub = VerdictHub(engine: InternetVerdict(classifier: configuration.classifier), checking: checking)
        let resolver = HostResolver()
        let hosts = try HostMonitor(
            judge: configuration.hostJudge, refreshSeconds: configuration.hostRefreshSeconds, resolver: resolver, logger: logger
        )
        let merger = SnapshotMerger { snapshot in
            let published = hub.update(snapshot: snapshot)
            if let published {
                logger.info("verdict", metadata: published.logMetadata)
            }
            hosts.networkChanged(snapshot, internetChanged: (published?.sequence ?? 0) > 1)
        }
        self.hub = hub
        self.resolver = resolver
        self.hosts = hosts
        self.merger = merger
        manager = NetworkManagerMetered.start(on: networkManager, merger: merger, logger: logger)
        watcher = NetlinkWatcher(options: options, logger: logger)
        self.metrics = metrics
        if let metrics {
            _ = hub.addObserver { metrics.verdictChanged($0) }
            hosts.setRejudgedObserver { metrics.hostsRejudged(in: $0) }
        }
    }

    /// Resynchronisations of the netlink caches so far.
    package var resynchronisations: Int { watcher.resynchronisationCount }

    /// Starts watching: the first snapshot is judged before this returns.
    package func start() throws {
        let merger = self.merger, manager = self.manager, metrics = self.metrics
        try watcher.start { snapshot in
            metrics?.snapshot(snapshot)
            merger.update(netlink: snapshot)
            manager?.follow(Set(snapshot.links.values.map(\.name)))
        }
    }

    package func stop() async {
        watcher.stop()
        manager?.stop()
        hosts.stop()
        await resolver.shutdown()
    }
}
