import Logging
import ReachdConfig
import ReachdMetrics
import ReachdModel
import ReachdMonitor
import ReachdServiceKit
import ReachdSystem
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// Everything `reachd-transfers` needs to start.
public struct TransferServiceOptions: Sendable {
    /// Where to bind when systemd passes no socket (nil: only a passed socket will do).
    public var socketPath: String?
    public var stateDirectory: String
    /// Where the offline cache keeps bodies (a directory per user inside).
    public var cacheDirectory: String
    public var configuration: Configuration
    public var watcher: NetworkView.Options
    /// The D-Bus bus for org.reachd.Transfers1.
    public var bus: Bus
    /// The bus where NetworkManager's metered flags are read (none: not at all).
    public var networkManager: Bus
    /// The bus where UPower and power-profiles-daemon are read (none: power constraints are taken as met).
    public var power: Bus
    /// The bus where xdg-desktop-portal's ProxyResolver is asked (none: not at all), where the configuration and the
    /// environment name no proxy.
    public var proxyResolver: Bus
    /// Who may use this instance.
    public var access: InstanceAccess
    /// Where per-host verdicts come from.
    public var verdicts: VerdictSource

    public enum VerdictSource: Sendable, Equatable {
        /// reachd's socket if it answers at start, else a netlink watcher of the service's own.
        case automatic(reachdSocket: String)
        /// reachd's socket; while it does not answer, jobs wait (their reason says so).
        case reachd(socket: String)
        /// A netlink watcher of the service's own (reachd's code, in this process).
        case netlink
    }

    public init(socketPath: String?, stateDirectory: String, cacheDirectory: String, configuration: Configuration, access: InstanceAccess,
                verdicts: VerdictSource, watcher: NetworkView.Options = .init(),
                bus: Bus = .system, networkManager: Bus = .system, power: Bus = .system, proxyResolver: Bus = .none) {
        self.access = access
        self.proxyResolver = proxyResolver
        self.power = power
        self.verdicts = verdicts
        self.bus = bus
        self.networkManager = networkManager
        self.socketPath = socketPath
        self.cacheDirectory = cacheDirectory
        self.stateDirectory = stateDirectory
        self.configuration = configuration
        self.watcher = watcher
    }
}

/// The transfer service: per-host verdicts (from reachd, or from the netlink watcher and judge reachd uses,
/// with the same configuration), the job store, the scheduler and the socket, until SIGTERM/SIGINT.
public enum TransferService {
    public static func run(options: TransferServiceOptions, logger: Logger) async throws {
        // A part that cannot start (a socket path that cannot be bound, a busy metrics port) stops the ones
        // before it: the error is reported as one line, never as a crash of threads left running.
        try await DaemonServices.run(logger: logger) { services in try await start(options, logger: logger, into: &services) }
    }

    /// The start-up steps in order, each part added to `services` once started: the job store, the verdicts,
    /// the scheduler loaded, the socket bound, the metrics endpoint listening, the D-Bus name taken; then the
    /// scheduler's verdict intake and systemd's readiness, which start when the group runs.
    private static func start(_ options: TransferServiceOptions, logger: Logger, into services: inout DaemonServices) async throws {
        try makeDirectory(options.stateDirectory, mode: 0o700)
        let (store, setAside) = try JobStore.open(directory: options.stateDirectory)
        let files = UserFiles(guarded: [options.stateDirectory, options.cacheDirectory])
        services.add(started: files)
        // The system instance uses only the configured netrc; a user's own instance also that user's ~/.netrc.
        let netrc = options.access.isSystem ? options.configuration.netrcPath : options.configuration.netrcPath ?? CredentialSource.ownNetrc
        let fetcher = Fetcher(caFile: options.configuration.caFile, readTimeout: options.configuration.readTimeoutSeconds, logger: logger)
        services.add(started: fetcher)
        let (hosts, network, reachd) = try await verdicts(options, logger: logger)
        if let reachd { services.add(started: reachd) }
        var settings = TransferScheduler.Settings()
        settings.gate = TransferGate(meteredThreshold: options.configuration.meteredThreshold)
        settings.concurrency = options.configuration.transferConcurrency
        settings.netrcPath = netrc
        settings.proxies = try InstanceProxies.settings(configuration: options.configuration, logger: logger)
        if settings.proxies == nil, options.configuration.transferProxy == nil, !options.access.isSystem,
           let resolver = DesktopProxyResolver.start(on: options.proxyResolver, logger: logger) {
            settings.desktopProxies = resolver
            // Stopped after the scheduler (the last added stops first): no lookup is left waiting on it.
            services.add(started: resolver)
        }
        settings.instanceRate = options.configuration.transferMaximumRate.map { SharedRate(bytesPerSecond: $0) }
        settings.meteredRate = options.configuration.meteredTransferMaximumRate.map { SharedRate(bytesPerSecond: $0) }
        settings.maximumJobsPerUser = options.configuration.maximumJobsPerUser
        settings.maximumJobs = options.configuration.maximumJobs
        settings.keepFinishedSeconds = options.configuration.keepFinishedSeconds
        settings.access = options.access
        let metrics = options.configuration.transfersMetricsListen.map { _ in TransferMetrics() }
        let scheduler = TransferScheduler(store: store, files: files, fetcher: fetcher, hosts: hosts, settings: settings, metrics: metrics,
                                          logger: logger)
        let intake = VerdictIntakeService { await scheduler.run(verdicts: $0) }
        hosts.setObserver { intake.take($0) }
        if let network {
            try network.start()
            services.add(started: network)
        }
        services.add(started: scheduler)
        try await scheduler.load(setAside: setAside)
        if let power = PowerSource.start(on: options.power, scheduler: scheduler, logger: logger) { services.add(started: power) }
        if let sleep = SleepSource.start(on: options.power, scheduler: scheduler, logger: logger) { services.add(started: sleep) }
        if let time = TimeChanges.follow(logger: logger, onChange: { change in Task { await scheduler.timeChanged(change) } }) {
            services.add(started: time)
        }
        let endpoint: SocketEndpoint = try .resolve(path: options.socketPath)
        let shared = options.access.isSystem
        try makeDirectory(options.cacheDirectory, mode: mode_t(CacheLayout.directoryMode(shared: shared)))
        CacheRepair.run(directory: options.cacheDirectory, shared: shared, store: store, logger: logger)
        let cache = OfflineCache(
            store: store, files: files, fetcher: fetcher, hosts: hosts,
            credentials: CredentialSource(netrcPath: netrc, files: files),
            directory: options.cacheDirectory, shared: shared,
            limits: CacheEviction.Limits(capacity: options.configuration.cacheCapacity, entries: options.configuration.cacheMaximumEntries,
                                         entriesPerUser: options.configuration.cacheMaximumEntriesPerUser),
            threshold: options.configuration.meteredThreshold, proxies: settings.proxies, desktopProxies: settings.desktopProxies,
            instanceRate: settings.instanceRate, meteredRate: settings.meteredRate, metrics: metrics, logger: logger
        )
        services.add(started: try await TransferServer(endpoint: endpoint, scheduler: scheduler, cache: cache, access: options.access, logger: logger))
        if let metrics, let address = options.configuration.transfersMetricsListen {
            services.add(started: try await MetricsEndpoint.start(on: address, logger: logger) {
                metrics.render(jobStates: await scheduler.stateCounts())
            })
        }
        let bus = await options.bus.serve(TransferBusService.name, logger: logger) {
            let service = try TransferBusService(bus: options.bus, scheduler: scheduler, access: options.access, logger: logger)
            try await service.start()
            return service
        }
        if let bus {
            services.add(started: bus)
        }
        services.add(intake)
        services.add(SystemdService(logger: logger) { "serving transfers" })
    }

    /// Where per-host verdicts come from (`TransferServiceOptions.verdicts`): reachd's socket, or a netlink watcher of
    /// the service's own (not started yet).
    private static func verdicts(_ options: TransferServiceOptions, logger: Logger) async throws
        -> (any HostVerdicts, NetworkView?, ReachdVerdicts?) {
        func ownWatcher() throws -> NetworkView {
            try NetworkView(configuration: options.configuration, watcher: options.watcher, networkManager: options.networkManager, logger: logger)
        }
        let path: String
        switch options.verdicts {
        case .netlink:
            let network = try ownWatcher()
            return (network.hosts, network, nil)
        case .reachd(let socket), .automatic(let socket):
            path = socket
        }
        let client = ReachdVerdicts(path: path, logger: logger)
        do {
            try await client.start()
        } catch {
            if case .automatic = options.verdicts {
                logger.notice("reachd does not answer at \(path) (\(error)): routes are judged in-process, by a netlink watcher of this service's own")
                let network = try ownWatcher()
                return (network.hosts, network, nil)
            }
            logger.warning("reachd does not answer at \(path) (\(error)): jobs wait until it does")
            client.keepTrying()
        }
        return (client, nil, client)
    }

    /// A directory and its parents (the job table's 0700; the offline cache's 0700, or 0711 for the system instance).
    private static func makeDirectory(_ path: String, mode: mode_t) throws {
        var components: [Substring] = []
        for component in path.split(separator: "/") {
            components.append(component)
            let prefix = "/" + components.joined(separator: "/")
            if mkdir(prefix, mode) != 0 && errno != EEXIST { throw FileError("cannot create the directory \(prefix)") }
        }
    }
}
