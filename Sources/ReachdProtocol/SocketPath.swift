/// Where the daemon's socket lives when no path is given.
public enum SocketPath {
    static let rules = SocketRules(system: "/run/reachd/reachd.sock", fileName: "reachd.sock", variable: "REACHD_SOCKET")

    /// The system daemon's socket.
    public static let system = rules.system

    /// `/run/reachd/reachd.sock` for root, else `$XDG_RUNTIME_DIR/reachd.sock`; nil when neither applies.
    public static func defaultPath(uid: UInt32, environment: [String: String]) -> String? {
        rules.defaultPath(system: uid == 0, environment: environment)
    }

    /// The client's choice: an explicit path, then `REACHD_SOCKET`, then the system socket if it exists
    /// or the per-user default.
    public static func clientPath(explicit: String?, uid: UInt32, environment: [String: String], exists: (String) -> Bool) -> String? {
        if let named = rules.named(explicit: explicit, environment: environment) { return named }
        if exists(system) { return system }
        return defaultPath(uid: uid, environment: environment)
    }
}

/// Where the transfer service's (`reachd-transfers`) socket and directories live: a user's own instance
/// (the default) or the system instance.
public enum TransferSocketPath {
    static let rules = SocketRules(system: "/run/reachd/transfers.sock", fileName: "reachd-transfers.sock", variable: "REACHD_TRANSFERS_SOCKET")

    /// The system instance's socket.
    public static let system = rules.system

    /// The system instance's socket for `system`, else `$XDG_RUNTIME_DIR/reachd-transfers.sock`; nil when
    /// there is no `XDG_RUNTIME_DIR`.
    public static func defaultPath(system: Bool, environment: [String: String]) -> String? {
        rules.defaultPath(system: system, environment: environment)
    }

    /// A client's choice: an explicit path, then `REACHD_TRANSFERS_SOCKET`, then the system instance's socket
    /// for `system` (`--system`, or root), else the user's own instance.
    public static func clientPath(explicit: String?, system: Bool, environment: [String: String]) -> String? {
        rules.named(explicit: explicit, environment: environment) ?? defaultPath(system: system, environment: environment)
    }

    /// The offline cache: the unit's `CacheDirectory=` (`$CACHE_DIRECTORY`), else /var/cache/reachd-transfers
    /// for the system instance, else `$XDG_CACHE_HOME/reachd` (default ~/.cache/reachd).
    public static func cacheDirectory(system: Bool, environment: [String: String]) -> String? {
        userDirectory(system: system, fromUnit: "CACHE_DIRECTORY", systemDefault: "/var/cache/reachd-transfers", variable: "XDG_CACHE_HOME",
                      underHome: ".cache", environment: environment)
    }

    /// The state directory: the unit's `StateDirectory=` (`$STATE_DIRECTORY`), else /var/lib/reachd-transfers
    /// for the system instance, else `$XDG_STATE_HOME/reachd` (default ~/.local/state/reachd).
    public static func stateDirectory(system: Bool, environment: [String: String]) -> String? {
        userDirectory(system: system, fromUnit: "STATE_DIRECTORY", systemDefault: "/var/lib/reachd-transfers", variable: "XDG_STATE_HOME",
                      underHome: ".local/state", environment: environment)
    }

    /// The directory systemd made for the unit (the first of a colon-separated list), else `systemDefault` for
    /// the system instance, else `$variable/reachd`, else `$HOME/underHome/reachd` (XDG base directories).
    private static func userDirectory(system: Bool, fromUnit: String, systemDefault: String, variable: String, underHome: String,
                                      environment: [String: String]) -> String? {
        if let unitDirectories = environment[fromUnit], let first = unitDirectories.split(separator: ":").first,
           first.hasPrefix("/") {
            return String(first)
        }
        if system { return systemDefault }
        if let base = environment[variable], base.hasPrefix("/") { return base + "/reachd" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return "\(home)/\(underHome)/reachd"
    }
}

/// Where a socket is: the system one, or the one in `$XDG_RUNTIME_DIR`, unless an explicit path or the
/// environment variable names it.
struct SocketRules {
    let system: String
    let fileName: String
    let variable: String

    /// The system socket for `system`, else `$XDG_RUNTIME_DIR/fileName`; nil without `XDG_RUNTIME_DIR`.
    func defaultPath(system useSystem: Bool, environment: [String: String]) -> String? {
        if useSystem { return system }
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        return runtime.hasSuffix("/") ? runtime + fileName : runtime + "/" + fileName
    }

    /// An explicit path, else the environment variable's; nil when neither names one.
    func named(explicit: String?, environment: [String: String]) -> String? {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment[variable], !fromEnvironment.isEmpty { return fromEnvironment }
        return nil
    }
}
