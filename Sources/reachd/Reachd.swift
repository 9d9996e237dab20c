import ArgumentParser
import Logging
import NIOCore
import NIOPosix
import ReachdConfig
import ReachdModel
import ReachdMonitor
import ReachdProtocol
import ReachdDaemon
import ReachdServiceKit
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

@main
enum ReachdMain {
    static func main() {
        // Before any thread or task exists: async code runs on NIO's event loops instead of libdispatch's
        // worker pool (whose monitor ticks every second), and the main thread only waits for signals.
        ShutdownSignals.block()
        Daemon.limitMemoryArenas()
        GlobalExecutor.runOnEventLoops()
        // Detached: `main` is on the main actor, whose queue nobody drains while this thread waits for signals.
        Task.detached {
            await Reachd.main()
            exit(0)
        }
        ShutdownSignals.waitForever()
    }
}

struct Reachd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reachd",
        abstract: "Network reachability daemon: watches the kernel over netlink and serves verdicts on a Unix socket.",
        discussion: "Runs in the foreground and logs to stderr. SIGTERM or SIGINT stop it cleanly. The socket protocol is described in docs/protocol.md.",
        version: PackageVersion.current
    )

    @Option(help: "Unix socket path. Default: /run/reachd/reachd.sock as root, else $XDG_RUNTIME_DIR/reachd.sock.", completion: .file())
    var socket: String?

    @Option(help: "Configuration file (TOML): interface rules, unmetered destinations, host refresh, connectivity check; see reachd.toml(5).",
            completion: .file(extensions: ["toml"]))
    var config: String?

    @Option(help: "Where sysfs is mounted, for interface classification.", completion: .directory)
    var sysfsRoot: String = "/sys"

    @Option(help: "Where systemd-networkd keeps its state files (DHCP leases, announced captive portals).", completion: .directory)
    var networkdRoot: String = "/run/systemd/netif"

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.", completion: .list(Logger.Level.allCases.map(\.rawValue)))
    var logLevel: String = "info"

    @Option(help: "Bytes queued for one client before it is dropped as not reading.")
    var clientQueueLimit: Int = 256 * 1024

    @Option(help: "Receive buffer of each netlink event socket (links and addresses; default routes), in bytes.")
    var netlinkReceiveBuffer: Int = 4 << 20

    @Option(help: "D-Bus bus for org.reachd.Reachability1. A bus that is not there is skipped with a warning.")
    var bus: Bus = .system

    @Option(help: "Bus where NetworkManager's metered flags, ModemManager's roaming modems and the Wi-Fi networks joined (iwd, wpa_supplicant) are read.")
    var networkmanager: Bus = .system

    @Option(help: "Bus where reachd serves a read-only face of NetworkManager's D-Bus API from its verdicts, for hosts without NetworkManager (docs/networkmanager-face.md); auto: the system bus where systemd says NetworkManager.service is not enabled (the installed unit's choice). Off (none) by default.")
    var networkmanagerFace: NetworkManagerFaceMode = .none

    @Option(help: "Directory for what must survive a restart (the data budgets' counts). Default: $STATE_DIRECTORY (systemd's StateDirectory=), else /var/lib/reachd.",
            completion: .directory)
    var stateDirectory: String?

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown log level \"\(logLevel)\"")
        }
        guard clientQueueLimit >= 1024 else { throw ValidationError("--client-queue-limit must be at least 1024") }
        guard netlinkReceiveBuffer >= 4096 else { throw ValidationError("--netlink-receive-buffer must be at least 4096") }
    }

    func run() async throws {
        DaemonStartup.bootstrapLogging(level: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "reachd")
        if MultiThreadedEventLoopGroup.currentEventLoop == nil {
            logger.warning("async code runs on libdispatch's worker pool, not on the event loops: the daemon wakes every second")
        }
        var environment: [String: String] = [:]
        if let runtime = getenv("XDG_RUNTIME_DIR") { environment["XDG_RUNTIME_DIR"] = String(cString: runtime) }
        // nil for a system user without XDG_RUNTIME_DIR: then only a socket systemd passes will do.
        let path = socket ?? SocketPath.defaultPath(uid: getuid(), environment: environment)
        guard let configuration = DaemonStartup.configuration(at: config, logger: logger) else { throw ExitCode(2) }
        do {
            var options = DaemonOptions(
                socketPath: path,
                configuration: configuration,
                watcher: .init(sysfsRoot: sysfsRoot, receiveBufferSize: netlinkReceiveBuffer, networkdRoot: networkdRoot),
                limits: .init(clientQueueBytes: clientQueueLimit, connections: configuration.socketLimits),
                bus: bus,
                networkManager: networkmanager,
                networkManagerFace: networkmanagerFace
            )
            options.stateDirectory = stateDirectory
                ?? getenv("STATE_DIRECTORY").flatMap { String(cString: $0).split(separator: ":").first.map(String.init) } ?? "/var/lib/reachd"
            try await Daemon.run(options: options, logger: logger)
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
    }
}

/// `--bus system|session|none`: parsed, listed in --help and completed by the shells from the cases.
extension Bus: ExpressibleByArgument {}

/// `--networkmanager-face system|session|none|auto`.
extension NetworkManagerFaceMode: ExpressibleByArgument {}

extension Configuration {
    /// reachd's socket limits with `[connections]` applied.
    var socketLimits: ConnectionLimits {
        var limits = SocketServer.connectionLimits
        limits.perUser = connectionsPerUser ?? limits.perUser
        limits.total = connections ?? limits.total
        return limits
    }
}
