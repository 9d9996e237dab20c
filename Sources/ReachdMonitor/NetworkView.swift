import Logging
import ReachdConfig
import ReachdModel
import ReachdNetlink
import ReachdSystem

/// The network as reachd judges it, shared by reachd, reachd-transfers and the library: the netlink watcher's
/// snapshots, joined with NetworkManager's metered flags and ModemManager's roaming links, feed the internet verdict (`hub`) and the
/// watched hosts (`hosts`).
public final class NetworkView: Sendable {
    /// The netlink watcher's settings, which tests and stress runs change.
    public struct Options: Sendable {
        /// Where sysfs is mounted (a fake tree in tests).
        public var sysfsRoot: String
        /// Receive buffer of each netlink event socket, in bytes (`SO_RCVBUFFORCE`, else `SO_RCVBUF`).
        public var receiveBufferSize: Int
        /// Where systemd-networkd keeps its state files (a fake tree in tests).
        public var networkdRoot: String

        public init(sysfsRoot: String = "/sys", receiveBufferSize: Int = 4 << 20, networkdRoot: String = "/run/systemd/netif") {
            self.sysfsRoot = sysfsRoot
            self.receiveBufferSize = receiveBufferSize
            self.networkdRoot = networkdRoot
        }
    }

    package let hub: VerdictHub
    package let hosts: HostMonitor
    package let resolver: HostResolver
    /// The netlink watcher (the daemon runs it as a service of its group).
    package let watcher: NetlinkWatcher
    private let manager: NetworkManagerMetered?
    private let modems: ModemManagerRoaming?
    private let wifiDaemons: (iwd: IwdNetworks?, wpaSupplicant: WpaSupplicantNetworks?)
    private let networkd: NetworkdStateFiles?
    private let merger: SnapshotMerger
    private let metrics: (any NetworkMetrics)?

    /// `checking`: a connectivity check will report into the hub; `snapshots` gets each merged snapshot, in
    /// order, after the hub judged it (ReachdNetwork judges its own paths from them); `sleeper`: how the watched
    /// hosts' refresh waits.
    package init(configuration: Configuration, checking: Bool = false, watcher options: Options,
                 networkManager: Bus, metrics: (any NetworkMetrics)? = nil, sleeper: Sleeper = .task, logger: Logger,
                 snapshots: (@Sendable (NetworkSnapshot) -> Void)? = nil) throws {
        let hub = VerdictHub(engine: InternetVerdict(classifier: configuration.classifier), checking: checking)
        let resolver = HostResolver()
        let hosts = try HostMonitor(
            judge: configuration.hostJudge, refreshSeconds: configuration.hostRefreshSeconds, resolver: resolver, sleeper: sleeper,
            logger: logger
        )
        let merger = SnapshotMerger(keepsCaptivePortals: configuration.captivePortalAPI) { snapshot in
            let published = hub.update(snapshot: snapshot)
            if let published {
                logger.info("verdict", metadata: published.logMetadata)
            }
            // nil when at most the captive portal's counters changed: not a network change, so the hosts are
            // re-judged (their verdicts take the new counters) but their names are not resolved again.
            hosts.networkChanged(snapshot, internetChanged: (published?.sequence ?? 0) > 1)
            snapshots?(snapshot)
        }
        self.hub = hub
        self.resolver = resolver
        self.hosts = hosts
        self.merger = merger
        manager = NetworkManagerMetered.start(on: networkManager, merger: merger, logger: logger)
        // ModemManager's roaming links, on the same bus as NetworkManager (the system's network services).
        modems = ModemManagerRoaming.start(on: networkManager, merger: merger, logger: logger)
        // The Wi-Fi networks joined, from iwd and wpa_supplicant, on the same bus.
        wifiDaemons = (IwdNetworks.start(on: networkManager, merger: merger, logger: logger),
                       WpaSupplicantNetworks.start(on: networkManager, merger: merger, logger: logger))
        networkd = configuration.readsNetworkd ? NetworkdStateFiles.start(root: options.networkdRoot, merger: merger, logger: logger) : nil
        watcher = NetlinkWatcher(sysfsRoot: options.sysfsRoot, receiveBufferSize: options.receiveBufferSize, logger: logger)
        self.metrics = metrics
        if let metrics {
            // First, as the subscribers' fan-out: a client that saw the event reads the same verdict in a scrape.
            _ = hub.addObserver(first: true) { metrics.verdictChanged($0) }
            hosts.setRejudgedObserver { metrics.hostsRejudged(in: $0) }
        }
    }

    /// Takes the captive-portal APIs' last answers (by API URL) from round `round` of queries into the verdicts;
    /// answers from a round older than the newest one seen are ignored.
    package func update(portalStatus: [String: CaptivePortalStatus], round: UInt64) {
        merger.update(portalStatus: portalStatus, round: round)
    }

    /// Takes the data budgets' standings into the verdicts: the interfaces' by link, the networks' by SSID
    /// (`SnapshotMerger.update(budgets:networks:)`).
    package func update(budgets: [String: BudgetStatus], networks: [[UInt8]: BudgetStatus] = [:]) {
        merger.update(budgets: budgets, networks: networks)
    }

    /// Calls `handler` with each deleted link's last byte counters (see `NetlinkWatcher.onLinkDeleted`).
    package func onLinkDeleted(_ handler: @escaping @Sendable (CounterReading) -> Void) {
        watcher.onLinkDeleted(handler)
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

    /// Stops the watcher, the connections to NetworkManager, ModemManager, iwd and wpa_supplicant, and the hosts' refresh; the resolver's threads end with `stop`.
    package func stopWatching() {
        watcher.stop()
        manager?.stop()
        modems?.stop()
        wifiDaemons.iwd?.stop()
        wifiDaemons.wpaSupplicant?.stop()
        networkd?.stop()
        hosts.stop()
    }

    package func stop() async {
        stopWatching()
        await resolver.shutdown()
    }
}

/// What `NetworkView` tells a daemon's metrics as it happens.
package protocol NetworkMetrics: Sendable {
    /// Each snapshot from the netlink watcher.
    func snapshot(_ snapshot: NetworkSnapshot)
    /// Each published change of the internet verdict.
    func verdictChanged(_ stamped: StampedVerdict)
    /// How long re-judging the watched hosts after a network change took.
    func hostsRejudged(in duration: Duration)
}

extension StampedVerdict {
    /// The verdict's fields for the log.
    package var logMetadata: Logger.Metadata {
        [
            "sequence": "\(sequence)",
            "status": "\(verdict.status.rawValue)",
            "interface": "\(verdict.interface ?? "-")",
            "metered": "\(verdict.metered)",
            "reason": "\(verdict.reason ?? "-")",
        ]
    }
}
