import CSystemd
import Logging
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// `--networkmanager-face`: where reachd serves its read-only NetworkManager face (docs/networkmanager-face.md).
/// `auto`, what the installed units pass: on the system bus where NetworkManager is not enabled, else not at all.
public enum NetworkManagerFaceMode: String, Sendable, CaseIterable {
    case system, session, none, auto
}

/// What systemd says of NetworkManager's unit file (`org.freedesktop.systemd1.Manager.GetUnitFileState`).
public enum NetworkManagerUnitFile: Equatable, Sendable {
    /// systemd knows no such unit: NetworkManager is not installed.
    case notFound
    /// The unit file's state as systemd names it: `enabled`, `disabled`, `masked`, `static`, ...
    case state(String)
    /// systemd could not be asked (no systemd on the bus, a refusal, a timeout): why.
    case unknown(String)
}

extension NetworkManagerFaceMode {
    /// The unit `auto` asks about.
    static let networkManagerUnit = "NetworkManager.service"

    /// `auto`'s decision: the face serves only where NetworkManager does not start by itself: not installed,
    /// disabled or masked. Every other state (enabled, enabled-runtime, static, indirect, alias, linked,
    /// generated, transient, bad, one systemd adds later) and no answer keep it off: it never stands in
    /// NetworkManager's way.
    public static func autoServes(_ unit: NetworkManagerUnitFile) -> Bool {
        switch unit {
        case .notFound: true
        case .state(let state): ["disabled", "masked", "masked-runtime"].contains(state)
        case .unknown: false
        }
    }

    /// The bus the face is served on: `auto` asks systemd on the system bus and says what it decided.
    func bus(logger: Logger) -> Bus {
        switch self {
        case .system: return .system
        case .session: return .session
        case .none: return .none
        case .auto:
            let unit = NetworkManagerUnitFile.read(Self.networkManagerUnit)
            let serves = Self.autoServes(unit)
            let what: String
            switch unit {
            case .notFound: what = "\(Self.networkManagerUnit) is not installed"
            case .state(let state): what = "\(Self.networkManagerUnit) is \(state)"
            case .unknown(let why): what = "systemd could not say whether \(Self.networkManagerUnit) is enabled (\(why))"
            }
            logger.info("D-Bus: \(what): the NetworkManager face is \(serves ? "on" : "off") (--networkmanager-face auto)")
            return serves ? .system : .none
        }
    }
}

extension NetworkManagerUnitFile {
    /// Asks systemd on the system bus for `unit`'s unit file state, waiting at most 5 s.
    static func read(_ unit: String) -> Self {
        var bus: OpaquePointer?
        let opened = sd_bus_open_system(&bus)
        guard opened >= 0, let bus else { return .unknown("\(BusError(call: "sd_bus_open_system", code: opened))") }
        defer { sd_bus_flush_close_unref(bus) }
        var call: OpaquePointer?
        var rc = sd_bus_message_new_method_call(bus, &call, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                "org.freedesktop.systemd1.Manager", "GetUnitFileState")
        guard rc >= 0, let call else { return .unknown("\(BusError(call: "sd_bus_message_new_method_call", code: rc))") }
        defer { sd_bus_message_unref(call) }
        rc = unit.withCString { sd_bus_message_append_basic(call, CChar(UInt8(ascii: "s")), $0) }
        guard rc >= 0 else { return .unknown("\(BusError(call: "sd_bus_message_append_basic", code: rc))") }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        rc = sd_bus_call(bus, call, 5_000_000, &error, &reply)
        guard rc >= 0, let reply else {
            let name = error.name.map { String(cString: $0) }
            // systemd 252 answers FileNotFound (ENOENT) for a unit it does not know; later ones NoSuchUnit.
            if rc == -ENOENT || name == "org.freedesktop.systemd1.NoSuchUnit" { return .notFound }
            let message = error.message.map { String(cString: $0).prefix(200) } ?? "\(String(cString: strerror(-rc)))"
            return .unknown("\(name ?? "GetUnitFileState"): \(message)")
        }
        defer { sd_bus_message_unref(reply) }
        var state: UnsafePointer<CChar>?
        rc = sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "s")), &state)
        guard rc > 0, let state else { return .unknown("\(BusError(call: "sd_bus_message_read_basic", code: rc < 0 ? rc : -EBADMSG))") }
        return .state(String(String(cString: state).prefix(64)))
    }
}
