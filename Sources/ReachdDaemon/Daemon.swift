import Logging
import NIOCore
import NIOPosix
import ReachdConfig
import ReachdMetrics
import ReachdModel
import ReachdMonitor
import ReachdNetlink
import ReachdServiceKit
import ServiceLifecycle
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
    /// The bus where NetworkManager's metered flags are read (none: not at all).
    public var networkManager: Bus

    public init(socketPath: String?, configuration: Configuration = Configuration(),
                watcher: NetworkView.Options = .init(), limits: SocketServer.Limits = .init(), bus: Bus = .system,
                networkManager: Bus = .system) {
        self.socketPath = socketPath
        self.bus = bus
        self.networkManager = networkManager
        self.configuration = configuration
        self.watcher = watcher
        self.limits = limits
    }
}

/// Assembles the daemon: watcher -> hub -> socket server, run as a service group until SIGTERM/SIGINT.
///
/// The event loops are NIO's singleton group; `reachd` installs it as Swift Concurrency's global executor,
/// so an idle daemon has no thread that wakes up (see ShutdownSignals and NetlinkWatcher).
public enum Daemon {
    /// Runs until SIGTERM or SIGINT, which `ShutdownSignals` takes on the main thread (see `reachd`'s main).
    public static func run(options: DaemonOptions, logger: Logger) async throws {
        raiseFileLimit(logger: logger)
        let metrics = options.configuration.metricsListen.map { _ in DaemonMetrics() }
        let network = try NetworkView(
            configuration: options.configuration, checking: options.configuration.connectivityCheck != nil,
            watcher: options.watcher, networkManager: options.networkManager, metrics: metrics, logger: logger
        )
        let hub = network.hub, hosts = network.hosts, resolver = network.resolver
        try network.start()
        let prober = options.configuration.connectivityCheck.map { check in
            ConnectivityProber(check: check, hub: hub, resolver: resolver, group: MultiThreadedEventLoopGroup.singleton, logger: logger)
        }
        if let prober {
            _ = hub.addObserver { prober.verdictChanged($0.verdict) }
            if let current = hub.current { prober.verdictChanged(current.verdict) }
        }
        let server: SocketServer
        do {
            let endpoint: SocketEndpoint = try .resolve(path: options.socketPath)
            server = try await SocketServer(
                endpoint: endpoint, hub: hub, hosts: hosts, group: MultiThreadedEventLoopGroup.singleton,
                limits: options.limits, metrics: metrics, logger: logger
            )
        } catch {
            await network.stop()
            throw error
        }
        let metricsEndpoint: MetricsEndpoint?
        if let metrics, let address = options.configuration.metricsListen {
            do {
                metricsEndpoint = try await MetricsEndpoint.start(on: address, logger: logger) {
                    metrics.render(resynchronisations: network.resynchronisations, watchedHosts: hosts.watchedCount)
                }
            } catch {
                await server.shutdown()
                await network.stop()
                throw error
            }
        } else {
            metricsEndpoint = nil
        }
        _ = hub.addObserver { Systemd.status($0.verdict.systemdStatus) }
        let bus = startBus(options.bus, hub: hub, hosts: hosts, logger: logger)
        Systemd.ready(status: hub.current?.verdict.systemdStatus ?? "starting")
        let watchdog = Systemd.startWatchdog(on: MultiThreadedEventLoopGroup.singleton.next(), logger: logger)
        let services = ServiceGroup(configuration: .init(
            services: [
                .init(service: network.watcherService),
                .init(service: SocketServerService(server: server)),
            ],
            logger: logger
        ))
        ShutdownSignals.onSignal { signal in
            logger.info("signal \(signal): shutting down")
            Systemd.stopping()
            Task { await services.triggerGracefulShutdown() }
        }
        try await services.run()
        watchdog?.cancel()
        await metricsEndpoint?.stop()
        bus?.stop()
        prober?.stop()
        await network.stop()
        logger.info("stopped")
    }

    /// The D-Bus service, or nil (with a warning) when that bus is not there: the socket still serves.
    private static func startBus(_ which: Bus, hub: VerdictHub, hosts: HostMonitor, logger: Logger) -> BusService? {
        guard which != .none else { return nil }
        do {
            let service = try BusService(bus: which, hub: hub, hosts: hosts, logger: logger)
            _ = hub.addObserver { service.verdictChanged($0.verdict) }
            try service.start()
            logger.info("D-Bus: \(BusService.name) on the \(which.rawValue) bus")
            return service
        } catch {
            logger.warning("D-Bus: the \(which.rawValue) bus cannot be used (\(error)); continuing without it")
            return nil
        }
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
