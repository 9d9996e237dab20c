import CReachdBus
import CSystemd
import Logging
import ReachdModel
import ReachdMonitor
import ReachdProtocol
import ReachdServiceKit
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// `org.reachd.Reachability1` at `/org/reachd/Reachability1` (dbus/org.reachd.Reachability1.xml): the
/// internet verdict as properties, `PropertiesChanged` only for values that changed, and `CheckHost`.
public final class BusService: @unchecked Sendable {
    public static let name = "org.reachd.Reachability1"
    public static let path = "/org/reachd/Reachability1"
    static let interface = "org.reachd.Reachability1"

    private let hub: VerdictHub
    private let hosts: HostMonitor
    private let ledger: HostRequestLedger
    private let logger: Logger
    private let connection: BusConnection
    /// Only touched on the bus thread.
    private var emitted: [String: BusMessage.Value] = [:]

    /// Connects, exports the object and takes the name; throws when the bus cannot be used.
    public init(bus which: Bus, hub: VerdictHub, hosts: HostMonitor, ledger: HostRequestLedger = HostRequestLedger(), logger: Logger) throws {
        self.hub = hub
        self.hosts = hosts
        self.ledger = ledger
        self.logger = logger
        connection = try BusConnection(which)
        var callbacks = reachd_bus_callbacks(get_property: busGetProperty, check_host: busCheckHost)
        let context = Unmanaged.passUnretained(self).toOpaque()
        do {
            try connection.export({ bus, slot in
                reachd_bus_add_object(bus, Self.path, Self.interface, &callbacks, context, &slot)
            }, what: "sd_bus_add_object_vtable")
            try connection.requestName(Self.name)
        } catch {
            connection.stop()
            throw error
        }
        if let verdict = hub.current?.verdict { emitted = Self.properties(of: verdict) }
    }

    /// Serves until `stop`.
    public func start() throws { try connection.start() }

    public func stop() { connection.stop() }

    /// A new internet verdict: properties whose value changed are announced.
    public func verdictChanged(_ verdict: Verdict) {
        connection.perform { [self] bus in emitChanges(for: verdict, on: bus) }
    }

    // MARK: - Bus thread

    private func emitChanges(for verdict: Verdict, on bus: OpaquePointer) {
        let now = Self.properties(of: verdict)
        let changed = now.keys.sorted().filter { emitted[$0] != now[$0] }
        emitted = now
        guard !changed.isEmpty else { return }
        var names = changed.map { strdup($0) } + [nil]
        defer { for name in names { free(name) } }
        let rc = sd_bus_emit_properties_changed_strv(bus, Self.path, Self.interface, &names)
        if rc < 0 { logger.warning("D-Bus: \(BusError(call: "sd_bus_emit_properties_changed", code: rc))") }
    }

    fileprivate func appendProperty(_ name: String, to reply: OpaquePointer) -> Int32 {
        guard let verdict = hub.current?.verdict, let value = Self.properties(of: verdict)[name] else { return -ENOENT }
        return BusMessage.append(value, to: reply)
    }

    fileprivate func checkHost(_ call: OpaquePointer) -> Int32 {
        var pointer: UnsafePointer<CChar>?
        let rc = sd_bus_message_read_basic(call, CChar(UInt8(ascii: "s")), &pointer)
        guard rc >= 0, let pointer else { return rc }
        let host = String(cString: pointer)
        guard Request.isValidHost(host) else {
            return BusMessage.replyError(call, name: "org.freedesktop.DBus.Error.InvalidArgs", message: "not a host name or address: \(host.prefix(64))")
        }
        // The caller's uid, from the bus: whose turn its lookup takes, and whose count of waiting requests.
        guard let uid = BusMessage.senderIDs(of: call)?.uid else {
            return BusMessage.replyError(call, name: "org.freedesktop.DBus.Error.AccessDenied", message: "the caller's uid is unknown")
        }
        guard ledger.admit(uid: uid) else {
            return BusMessage.replyError(
                call, name: "org.freedesktop.DBus.Error.LimitsExceeded",
                message: "uid \(uid) has \(HostRequestLimits.perUser) host requests waiting for their answers, the most one user may have; wait for their answers and try again"
            )
        }
        let message = BusMessage.Retained(call)
        Task { [ledger] in
            let verdict = await hosts.verdict(for: host, requester: .user(uid))
            ledger.release(uid: uid)
            self.connection.perform { [logger] bus in
                BusMessage.reply(message.pointer, with: BusMessage.dictionary(of: verdict), on: bus, logger: logger)
                message.release()
            }
        }
        return 1
    }

    // MARK: - Values

    static func properties(of verdict: Verdict) -> [String: BusMessage.Value] {
        [
            "Reachable": .bool(verdict.reachable),
            "Status": .string(verdict.status.rawValue),
            "Metered": .bool(verdict.metered),
            "MeteredReason": .string(verdict.meteredReason ?? ""),
            "MeteredState": .string(verdict.meteredState.rawValue),
            "MeteredSource": .string(verdict.meteredSource?.rawValue ?? ""),
            "Interface": .string(verdict.interface ?? ""),
            "Flags": .strings(verdict.flags.names),
            "Connectivity": .string(verdict.connectivity.rawValue),
            "CaptivePortalAPI": .string(verdict.captivePortal?.apiURL ?? ""),
            "CaptivePortalURL": .string(verdict.captivePortal?.status?.userPortalURL ?? ""),
            "CaptivePortalSecondsRemaining": .int64(Self.count(verdict.captivePortal?.status?.secondsRemaining)),
            "CaptivePortalBytesRemaining": .int64(Self.count(verdict.captivePortal?.status?.bytesRemaining)),
            // The data budget of the path's link (issue 33).
            "BudgetState": .string(verdict.budget?.state.rawValue ?? ""),
            "BudgetUsedBytes": .int64(Self.count(verdict.budget?.usedBytes)),
            "BudgetLimitBytes": .int64(Self.count(verdict.budget?.limitBytes)),
            "BudgetPeriod": .string(verdict.budget?.period ?? ""),
            // Roaming and the path's cost (issue 33).
            "Roaming": .bool(verdict.roaming),
            "RoamingSource": .string(verdict.roamingSource?.rawValue ?? ""),
            "Cost": .string(verdict.cost?.level.rawValue ?? ""),
            "CostFlags": .strings(verdict.cost?.flagNames ?? []),
            // The Wi-Fi network of the path's link (issue 50).
            "WifiNetwork": .string(verdict.wifiNetwork?.name ?? ""),
            "WifiBSSID": .string(verdict.wifiNetwork?.bssidText ?? ""),
        ]
    }

    /// A count as D-Bus `x`: -1 for unknown (and the largest value for a count beyond it).
    private static func count(_ value: UInt64?) -> Int64 {
        value.map { Int64(clamping: $0) } ?? -1
    }
}

private let busGetProperty: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> Int32 = { context, name, reply in
    guard let context, let name, let reply else { return -EINVAL }
    return Unmanaged<BusService>.fromOpaque(context).takeUnretainedValue().appendProperty(String(cString: name), to: reply)
}

private let busCheckHost: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?) -> Int32 = { context, call in
    guard let context, let call else { return -EINVAL }
    return Unmanaged<BusService>.fromOpaque(context).takeUnretainedValue().checkHost(call)
}
