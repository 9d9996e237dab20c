/// Where the daemon's socket lives when no path is given.
public enum SocketPath {
    /// The system daemon's socket.
    public static let system = "/run/reachd/reachd.sock"

    /// `/run/reachd/reachd.sock` for root, else `$XDG_RUNTIME_DIR/reachd.sock`; nil when neither applies.
    public static func defaultPath(uid: UInt32, environment: [String: String]) -> String? {
        if uid == 0 { return system }
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        return runtime.hasSuffix("/") ? runtime + "reachd.sock" : runtime + "/reachd.sock"
    }

    /// The client's choice: an explicit path, then `REACHD_SOCKET`, then the system socket if it exists
    /// or the per-user default.
    public static func clientPath(explicit: String?, uid: UInt32, environment: [String: String], exists: (String) -> Bool) -> String? {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment["REACHD_SOCKET"], !fromEnvironment.isEmpty { return fromEnvironment }
        if exists(system) { return system }
        return defaultPath(uid: uid, environment: environment)
    }
}

/// Where the transfer service's (`reachd-transfers`) socket lives.
public enum TransferSocketPath {
    public static let system = "/run/reachd/transfers.sock"

    /// `/run/reachd/transfers.sock` for root, else `$XDG_RUNTIME_DIR/reachd-transfers.sock`.
    public static func defaultPath(uid: UInt32, environment: [String: String]) -> String? {
        if uid == 0 { return system }
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        return runtime.hasSuffix("/") ? runtime + "reachd-transfers.sock" : runtime + "/reachd-transfers.sock"
    }

    /// An explicit path, then `REACHD_TRANSFERS_SOCKET`, then the system socket if it exists, else the per-user one.
    public static func clientPath(explicit: String?, uid: UInt32, environment: [String: String], exists: (String) -> Bool) -> String? {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment["REACHD_TRANSFERS_SOCKET"], !fromEnvironment.isEmpty { return fromEnvironment }
        if exists(system) { return system }
        return defaultPath(uid: uid, environment: environment)
    }

    /// The offline cache: /var/cache/reachd for root, else `$XDG_CACHE_HOME/reachd` (default ~/.cache/reachd).
    public static func cacheDirectory(uid: UInt32, environment: [String: String]) -> String? {
        if uid == 0 { return "/var/cache/reachd" }
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/reachd" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.cache/reachd"
    }

    /// The state directory: /var/lib/reachd for root, else `$XDG_STATE_HOME/reachd` (default ~/.local/state/reachd).
    public static func stateDirectory(uid: UInt32, environment: [String: String]) -> String? {
        if uid == 0 { return "/var/lib/reachd" }
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/reachd" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.local/state/reachd"
    }
}
