import CReachdMemory
import Logging
import NIOPosix
import ReachdConfig
import ReachdMetrics
import ReachdModel
import ReachdMonitor
import ReachdServiceKit
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// Everything `reachd` needs to start.
public struct DaemonOptions: Sendable {
    /// Where to bind when systemd passes no socket (nil: only a passed socket will do).
    public var socketPath: String?
    public var configuration: Configuration
    public var watcher: NetworkView.Options
    public var limits: SocketServer.Limits
    /// The D-Bus bus to serve `org.reachd.Reachability1` on.
    public var bus: Bus
    /// The bus where NetworkManager's metered flags and ModemManager's roaming modems are read (none: not at all).
    public var networkManager: Bus
    /// Where reachd serves its read-only face of NetworkManager (none: not at all; auto: on the system bus where
    /// NetworkManager is not enabled; docs/networkmanager-face.md).
    public var networkManagerFace: NetworkManagerFaceMode
    /// Where reachd keeps what must survive a restart (the data budgets' counts).
    public var stateDirectory = "/var/lib/reachd"

    public init(socketPath: String?, configuration: Configuration = Configuration(),
                watcher: NetworkView.Options = .init(), limits: SocketServer.Limits = .init(), bus: Bus = .system,
                networkManager: Bus = .system, networkManagerFace: NetworkManagerFaceMode = .none) {
        self.socketPath = socketPath
        self.bus = bus
        self.networkManager = networkManager
        self.networkManagerFace = networkManagerFace
        self.configuration = configuration
        self.watcher = watcher
        self.limits = limits
    }
}

/// Assembles the daemon: watcher -> hub -> socket server, run as a service group until SIGTERM/SIGINT.
///
/// The event loops are NIO's singleton group; `reachd` installs it as Swift Concurrency's global executor,
/// so an idle daemon has no thread that wakes up (see ShutdownSignals and PollThread).
public enum Daemon {
    /// Caps glibc's malloc at two arenas; call first, before any thread exists. By default each of the daemon's
    /// threads (event loops, resolver, netlink, bus) may get an arena of its own, and freed memory scattered over
    /// them stays resident: after the mixed attack of bench/hostile, +7 to +8 MB stayed 3 s after the clients
    /// left, +5 to +6 with two arenas. reachd allocates little, so two arenas cost it no measurable time.
    public static func limitMemoryArenas() {
        _ = reachd_limit_arenas(2)
    }

    /// Runs until SIGTERM or SIGINT, which `ShutdownSignals` takes on the main thread (see `reachd`'s main).
    public static func run(options: DaemonOptions, logger: Logger) async throws {
        raiseFileLimit(logger: logger)
        try await DaemonServices.run(logger: logger) { services in try await start(options, logger: logger, into: &services) }
    }

    /// The start-up steps in order, each part added to `services` once started: the network judged (the first
    /// snapshot), the socket bound, the metrics endpoint listening, the D-Bus name taken; then the connectivity
    /// check, the captive-portal API queries and systemd's readiness, which start when the group runs.
    private static func start(_ options: DaemonOptions, logger: Logger, into services: inout DaemonServices) async throws {
        let metrics = options.configuration.metricsListen.map { _ in DaemonMetrics() }
        // Tells the NetworkManager face of each snapshot once it serves (links change without the verdict), and the
        // budgets, which sample when a link changes Wi-Fi networks.
        let snapshotRelay = Relay<Void>(), budgetRelay = Relay<NetworkSnapshot>()
        // Every wait is timed by the event loops: Task.sleep would start libdispatch's pool and its 1 Hz monitor.
        let sleeper = Sleeper.eventLoops(MultiThreadedEventLoopGroup.singleton)
        let network = try NetworkView(
            configuration: options.configuration, checking: options.configuration.connectivityCheck != nil,
            watcher: options.watcher, networkManager: options.networkManager, metrics: metrics, sleeper: sleeper, logger: logger,
            snapshots: { snapshot in
                snapshotRelay.call(())
                budgetRelay.call(snapshot)
            }
        )
        let hub = network.hub, hosts = network.hosts
        try network.start()
        services.add(started: network)
        // Data budgets (issue 33), counted only when configured; the first count is in the verdicts before the socket opens.
        let budgets = options.configuration.budgets.isEmpty ? nil : BudgetMonitor(
            budgets: options.configuration.budgets, stateDirectory: options.stateDirectory, view: network,
            sysfsRoot: options.watcher.sysfsRoot, sleeper: sleeper, logger: logger
        )
        if let budgets {
            network.onLinkDeleted { budgets.linkDeleted($0) }
            budgetRelay.set { budgets.networksChanged(in: $0) }
            budgets.sample()
            services.add(budgets)
        }
        // A set clock (an NTP step, and every resume from suspend): the network is read again, nothing seen before the
        // sleep taken on trust. Budgets count at once in the period of the new time or the new zone.
        if let time = TimeChanges.follow(logger: logger, onChange: { change in
            if change == .clockSet { network.watcher.readAgain() }
            budgets?.sample()
        }) {
            services.add(started: time)
        }
        let endpoint: SocketEndpoint = try .resolve(path: options.socketPath)
        // One count of each user's waiting host requests, over the socket and D-Bus together.
        let ledger = HostRequestLedger()
        services.add(started: try await SocketServer(
            endpoint: endpoint, hub: hub, hosts: hosts, group: MultiThreadedEventLoopGroup.singleton,
            limits: options.limits, ledger: ledger, metrics: metrics, logger: logger
        ))
        if let metrics, let address = options.configuration.metricsListen {
            services.add(started: try await MetricsEndpoint.start(on: address, logger: logger) {
                metrics.budgets(budgets?.current ?? [:])
                return metrics.render(resynchronisations: network.resynchronisations, watchedHosts: hosts.watchedCount)
            })
        }
        _ = hub.addObserver { Systemd.status($0.verdict.systemdStatus) }
        let bus = await options.bus.serve(BusService.name, logger: logger) {
            let service = try BusService(bus: options.bus, hub: hub, hosts: hosts, ledger: ledger, logger: logger)
            // Starting with the current verdict: a change between the service reading it and this line is announced too.
            _ = hub.addObserver(startingWithCurrent: true, refreshes: true) { service.verdictChanged($0.verdict) }
            try service.start()
            return service
        }
        if let bus {
            services.add(started: bus)
        }
        let faceBus = options.networkManagerFace.bus(logger: logger)
        let face = await faceBus.serve(NetworkManagerFace.name, logger: logger) {
            let face = try NetworkManagerFace(
                bus: faceBus, hub: hub, classifier: options.configuration.classifier,
                checking: options.configuration.connectivityCheck != nil, sleeper: sleeper, logger: logger
            )
            // The verdict's changes (the connectivity check's too) and every snapshot, from the current ones on.
            _ = hub.addObserver(startingWithCurrent: true, refreshes: true) { _ in face.networkChanged() }
            snapshotRelay.set { _ in face.networkChanged() }
            try face.start()
            return face
        }
        if let face {
            services.add(started: face)
        }
        if let check = options.configuration.connectivityCheck {
            let prober = ConnectivityProber(
                check: check, hub: hub, resolver: network.resolver, group: MultiThreadedEventLoopGroup.singleton, logger: logger
            )
            services.add(VerdictFollowerService(follower: prober, hub: hub))
        }
        if options.configuration.captivePortalAPI {
            let monitor = CaptivePortalMonitor(view: network, group: MultiThreadedEventLoopGroup.singleton, logger: logger)
            services.add(VerdictFollowerService(follower: monitor, hub: hub))
        }
        services.add(SystemdService(logger: logger) { hub.current?.verdict.systemdStatus ?? "starting" })
    }

    /// Many subscribers need many descriptors: take the hard limit.
    private static func raiseFileLimit(logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            logger.debug("could not raise RLIMIT_NOFILE")
        }
    }
}

extension StampedVerdict {
    var logMetadata: Logger.Metadata {
        [
            "sequence": "\(sequence)",
            "status": "\(verdict.status.rawValue)",
            "interface": "\(verdict.interface ?? "-")",
            "metered": "\(verdict.metered)",
            "reason": "\(verdict.reason ?? "-")",
        ]
    }
}
