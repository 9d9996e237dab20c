import CSystemd
import ReachdModel
#if canImport(Glibc)
import Glibc
#endif

/// Reads reachd's internet verdict from its D-Bus properties (org.reachd.Reachability1) with sd-bus,
/// for `reachctl status --dbus`: the same answer through the other door.
enum BusStatus {
    static let name = "org.reachd.Reachability1", path = "/org/reachd/Reachability1"

    /// The verdict from the properties on the system or session bus; throws with sd-bus's message.
    static func read(system: Bool) throws(BusReadError) -> Verdict {
        var bus: OpaquePointer?
        let opened = system ? sd_bus_open_system(&bus) : sd_bus_open_user(&bus)
        guard opened >= 0, let bus else { throw BusReadError(cannotOpen: system, errno: -opened) }
        defer { sd_bus_flush_close_unref(bus) }
        do {
            return try verdict(on: bus)
        } catch {
            throw BusReadError(reading: error, system: system)
        }
    }

    private static func verdict(on bus: OpaquePointer) throws(BusReadError) -> Verdict {
        let reachable = try bool(bus, "Reachable"), metered = try bool(bus, "Metered")
        let status = ReachabilityStatus(rawValue: try string(bus, "Status")) ?? .other
        let reason = try string(bus, "MeteredReason"), interface = try string(bus, "Interface")
        let flags = ReachabilityFlags(names: try strings(bus, "Flags")) ?? []
        var verdict = Verdict(
            target: "internet", reachable: reachable, status: status, metered: metered, meteredReason: reason.isEmpty ? nil : reason,
            interface: interface.isEmpty ? nil : interface, flags: flags, reason: reachable ? nil : "no usable route (D-Bus carries no reason)",
            family: nil, ipv4: .unreachable(.noRoute, ""), ipv6: .unreachable(.noRoute, "")
        )
        verdict.connectivity = Connectivity(rawValue: try string(bus, "Connectivity")) ?? .unknown
        verdict.meteredState = MeteredState(rawValue: try string(bus, "MeteredState")) ?? verdict.meteredState
        verdict.meteredSource = MeteredSource(rawValue: try string(bus, "MeteredSource"))
        verdict.budget = budget(on: bus)
        // From a reachd too old to have them: not roaming.
        if (try? bool(bus, "Roaming")) == true {
            verdict.roamingSource = (try? string(bus, "RoamingSource")).flatMap(RoamingSource.init(rawValue:))
        }
        if let name = try? string(bus, "WifiNetwork"), let ssid = WifiIdentity.ssid(name: name) {
            verdict.wifiNetwork = WifiIdentity(ssid: ssid, bssid: (try? string(bus, "WifiBSSID")).flatMap(WifiIdentity.bssid))
        }
        return verdict
    }

    /// The data budget's properties; nil without a budget, or from a reachd too old to have them. The reset
    /// time is not on the bus.
    private static func budget(on bus: OpaquePointer) -> BudgetStatus? {
        guard let state = (try? string(bus, "BudgetState")).flatMap(BudgetState.init(rawValue:)),
              let used = try? count(bus, "BudgetUsedBytes"), let limit = try? count(bus, "BudgetLimitBytes"),
              let period = try? string(bus, "BudgetPeriod") else { return nil }
        return BudgetStatus(state: state, usedBytes: UInt64(clamping: used), limitBytes: UInt64(clamping: limit), period: period,
                            resetsAt: Timestamp(microseconds: 0))
    }

    private static func count(_ bus: OpaquePointer, _ property: String) throws(BusReadError) -> Int64 {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var value: Int64 = 0
        let rc = sd_bus_get_property_trivial(bus, name, path, name, property, &error, CChar(UInt8(ascii: "x")), &value)
        guard rc >= 0 else { throw BusReadError(property, error, rc) }
        return value
    }

    private static func bool(_ bus: OpaquePointer, _ property: String) throws(BusReadError) -> Bool {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var value: Int32 = 0
        let rc = sd_bus_get_property_trivial(bus, name, path, name, property, &error, CChar(UInt8(ascii: "b")), &value)
        guard rc >= 0 else { throw BusReadError(property, error, rc) }
        return value != 0
    }

    private static func string(_ bus: OpaquePointer, _ property: String) throws(BusReadError) -> String {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var value: UnsafeMutablePointer<CChar>?
        let rc = sd_bus_get_property_string(bus, name, path, name, property, &error, &value)
        guard rc >= 0, let value else { throw BusReadError(property, error, rc) }
        defer { free(value) }
        return String(cString: value)
    }

    private static func strings(_ bus: OpaquePointer, _ property: String) throws(BusReadError) -> [String] {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let rc = sd_bus_get_property_strv(bus, name, path, name, property, &error, &list)
        guard rc >= 0, let list else { throw BusReadError(property, error, rc) }
        defer {
            var cursor = list
            while let item = cursor.pointee { free(item); cursor += 1 }
            free(list)
        }
        var result: [String] = []
        var cursor = list
        while let item = cursor.pointee {
            result.append(String(cString: item))
            cursor += 1
        }
        return result
    }
}

/// Why the verdict could not be read from the bus, as one line with the way out.
struct BusReadError: Error, CustomStringConvertible {
    let description: String
    /// The D-Bus error name (org.freedesktop.DBus.Error.…) of a failed call; nil when the bus could not be opened.
    let name: String?

    init(cannotOpen system: Bool, errno code: Int32) {
        let reason = String(cString: strerror(code))
        description = system
            ? "cannot connect to the system bus (\(reason)): is dbus running? reachctl status without --dbus asks reachd's socket"
            : "cannot connect to the session bus (\(reason)): there is none outside a login session; use --dbus system, or reachctl status without --dbus"
        name = nil
    }

    init(_ property: String, _ error: sd_bus_error, _ rc: Int32) {
        let message = error.message.map { String(cString: $0) } ?? String(cString: strerror(-rc))
        description = "reading \(property) from \(BusStatus.name): \(message)"
        name = error.name.map { String(cString: $0) }
    }

    /// `error` of a property read on the system or session bus, with what to do about the failures a first run meets.
    init(reading error: BusReadError, system: Bool) {
        let bus = system ? "system" : "session"
        switch error.name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            description = "reachd is not on the \(bus) bus (\(error.description)): start it with \"systemctl start reachd\" "
                + "(reachd --bus \(bus) when run by hand), or ask its socket: reachctl status without --dbus"
        case "org.freedesktop.DBus.Error.AccessDenied":
            description = "the \(bus) bus refused the call (\(error.description)): is reachd's D-Bus policy, "
                + "org.reachd.Reachability1.conf, installed in /usr/share/dbus-1/system.d?"
        default:
            description = error.description
        }
        name = error.name
    }
}
