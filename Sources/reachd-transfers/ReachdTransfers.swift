import ArgumentParser
import Logging
import ReachdConfig
import ReachdModel
import ReachdMonitor
import ReachdProtocol
import ReachdServiceKit
import ReachdSystem
import ReachdTransferModel
import ReachdTransfers
#if canImport(Glibc)
import Glibc
#endif

@main
enum TransfersMain {
    static func main() {
        // Signals are taken by sigwait on the main thread (see ShutdownSignals); the service runs detached.
        ShutdownSignals.block()
        Task.detached {
            await TransfersCommand.main()
            exit(0)
        }
        ShutdownSignals.waitForever()
    }
}

struct TransfersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reachd-transfers",
        abstract: "reachd's transfer service: a persistent download queue gated by metered and unreachable routes.",
        discussion: """
            Runs in the foreground and logs to stderr; SIGTERM or SIGINT stop it (running transfers keep their \
            partial files and resume at the next start). Clients: reachctl download …; protocol in docs/transfers.md.

            It never runs as root. A user's own instance (systemctl --user start reachd-transfers.socket) serves \
            that user only and writes their files as them; the system instance (--system, as the reachd-transfers \
            system user) serves root and members of its group, and writes only where its user may.
            """,
        version: PackageVersion.current
    )

    @Flag(help: "Be the system instance: serve root and members of this user's primary group, not only this user.")
    var system = false

    @Option(help: "Unix socket path. Default: /run/reachd/transfers.sock with --system, else $XDG_RUNTIME_DIR/reachd-transfers.sock.",
            completion: .file())
    var socket: String?

    @Option(help: "State directory (the job table). Default: $STATE_DIRECTORY (systemd), else /var/lib/reachd-transfers with --system, else $XDG_STATE_HOME/reachd.",
            completion: .directory)
    var stateDir: String?

    @Option(help: "Offline cache directory. Default: $CACHE_DIRECTORY (systemd), else /var/cache/reachd-transfers with --system, else $XDG_CACHE_HOME/reachd.",
            completion: .directory)
    var cacheDir: String?

    @Option(help: "Configuration file (TOML), the same as reachd's (reachd.toml(5)); [downloads] sets the metered threshold and concurrency.",
            completion: .file(extensions: ["toml"]))
    var config: String?

    @Option(help: "Where per-host verdicts come from: reachd (its socket; jobs wait while it does not answer), netlink (a watcher of this process's own), or auto (reachd if it answers at start, else netlink).",
            completion: .list(["auto", "reachd", "netlink"]))
    var verdicts: String = "auto"

    @Option(help: "reachd's socket. Default: $REACHD_SOCKET, else /run/reachd/reachd.sock if present, else $XDG_RUNTIME_DIR/reachd.sock.",
            completion: .file())
    var reachdSocket: String?

    @Option(help: "Where sysfs is mounted, for interface classification (netlink verdicts).", completion: .directory)
    var sysfsRoot: String = "/sys"

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.", completion: .list(Logger.Level.allCases.map(\.rawValue)))
    var logLevel: String = "info"

    @Option(help: "D-Bus bus for org.reachd.Transfers1. Default: system with --system, else session. A bus that is not there is skipped with a warning.")
    var bus: Bus?

    @Option(help: "Bus where NetworkManager's metered flags and ModemManager's roaming modems are read, for netlink verdicts (reachd's verdicts carry reachd's own).")
    var networkmanager: Bus = .system

    @Option(help: "Bus where UPower and power-profiles-daemon are read, for jobs' power constraints, and logind's sleep followed (none: the constraints are taken as met, and transfers are not stopped before a sleep).")
    var power: Bus = .system

    @Option(help: "Bus where the desktop's proxy settings are asked per job, of xdg-desktop-portal's ProxyResolver, when neither the configuration nor the environment names a proxy. Default: session; the system instance never asks (none).")
    var proxyResolver: Bus?

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \"\(logLevel)\"") }
        guard ["auto", "reachd", "netlink"].contains(verdicts) else { throw ValidationError("--verdicts must be auto, reachd or netlink") }
        guard proxyResolver != .system else { throw ValidationError("--proxy-resolver takes session or none: the portal is on the session bus") }
        guard !system || proxyResolver != .session else { throw ValidationError("the system instance never asks a desktop: --proxy-resolver session is refused") }
    }

    func run() async throws {
        DaemonStartup.bootstrapLogging(level: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "reachd-transfers")
        guard geteuid() != 0 else {
            logger.critical("""
                reachd-transfers does not run as root: run each user's own instance (systemctl --user start \
                reachd-transfers.socket) or the system instance as its own user (systemctl start reachd-transfers.socket)
                """)
            throw ExitCode(1)
        }
        let access: InstanceAccess
        if system {
            guard getegid() != 0 else {
                logger.critical("the system instance does not run in group root (gid 0): give it a group of its own")
                throw ExitCode(1)
            }
            let group = getgrgid(getegid()).map { String(cString: $0.pointee.gr_name) } ?? "\(getegid())"
            access = .system(uid: geteuid(), gid: getegid(), groupName: group)
        } else {
            access = .user(uid: geteuid())
        }
        var environment: [String: String] = [:]
        for name in ["XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CACHE_HOME", "HOME", "STATE_DIRECTORY", "CACHE_DIRECTORY", "REACHD_SOCKET"] {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        // nil for a system user without XDG_RUNTIME_DIR: then only a socket systemd passes will do.
        let path = socket ?? TransferSocketPath.defaultPath(system: system, environment: environment)
        guard let state = stateDir ?? TransferSocketPath.stateDirectory(system: system, environment: environment), state.hasPrefix("/") else {
            throw ValidationError("no state directory: pass --state-dir PATH (absolute) or set XDG_STATE_HOME")
        }
        guard let cache = cacheDir ?? TransferSocketPath.cacheDirectory(system: system, environment: environment), cache.hasPrefix("/") else {
            throw ValidationError("no cache directory: pass --cache-dir PATH (absolute) or set XDG_CACHE_HOME")
        }
        guard let configuration = DaemonStartup.configuration(at: config, logger: logger) else { throw ExitCode(2) }
        let reachd = SocketPath.clientPath(explicit: reachdSocket, uid: getuid(), environment: environment) { Glibc.access($0, F_OK) == 0 }
        let source: TransferServiceOptions.VerdictSource
        if verdicts == "netlink" {
            source = .netlink
        } else if let reachd {
            source = verdicts == "reachd" ? .reachd(socket: reachd) : .automatic(reachdSocket: reachd)
        } else if verdicts == "auto" {
            source = .netlink
        } else {
            throw ValidationError("no reachd socket: pass --reachd-socket PATH, or set REACHD_SOCKET or XDG_RUNTIME_DIR")
        }
        do {
            try await TransferService.run(
                options: TransferServiceOptions(
                    socketPath: path, stateDirectory: state, cacheDirectory: cache, configuration: configuration, access: access,
                    verdicts: source, watcher: .init(sysfsRoot: sysfsRoot), bus: bus ?? (system ? .system : .session),
                    networkManager: networkmanager, power: power, proxyResolver: system ? .none : proxyResolver ?? .session
                ),
                logger: logger
            )
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
    }
}

/// `--bus system|session|none`: parsed, listed in --help and completed by the shells from the cases.
extension Bus: ExpressibleByArgument {}
