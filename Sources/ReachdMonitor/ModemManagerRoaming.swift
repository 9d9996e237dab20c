import CSystemd
import Logging
import ReachdModel
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// ModemManager as the roaming source (issue 33): the modems (its ObjectManager), each modem's 3GPP
/// `RegistrationState` and the `Interface` of its bearers, decided by `ModemRoaming` (pure). Read at start
/// and again when ModemManager says a modem came or went (`InterfacesAdded`/`InterfacesRemoved`), when one of
/// those properties changed (`PropertiesChanged`), or when ModemManager appears or leaves the bus.
///
/// ModemManager is a peer like any other: at most `maximumObjects` objects, `ModemRoaming.maximumModems`
/// modems and `ModemRoaming.maximumBearers` bearers of each are read, each call waits at most 1 s and a
/// reading that takes over `refreshBudgetMicroseconds` is dropped (the last good one stays).
package final class ModemManagerRoaming: BusSource, @unchecked Sendable {
    package static let serviceName = "ModemManager"
    package static let withoutService = "no link is known to roam"
    static let service = "org.freedesktop.ModemManager1"
    static let root = "/org/freedesktop/ModemManager1"
    static let modemInterface = "org.freedesktop.ModemManager1.Modem"
    static let modem3gppInterface = "org.freedesktop.ModemManager1.Modem.Modem3gpp"
    static let bearerInterface = "org.freedesktop.ModemManager1.Bearer"
    /// The objects looked at in ModemManager's list (modems, and whatever else it lists).
    static let maximumObjects = 64
    static let callTimeoutMicroseconds: UInt64 = 1_000_000
    static let refreshBudgetMicroseconds: UInt64 = 5_000_000
    /// The properties whose change is a reason to read again, by interface.
    private static let followed = [modem3gppInterface: "RegistrationState", modemInterface: "Bearers", bearerInterface: "Interface"]

    private let connection: BusConnection
    private let peer = BusPeer(service: service, timeoutMicroseconds: callTimeoutMicroseconds)
    private let logger: Logger
    private let onChange: @Sendable ([String: RoamingSource]) -> Void
    // Only touched on the bus thread.
    private var values: [String: RoamingSource] = [:]

    /// Connects and subscribes; `onChange` gets every new map of roaming link → source (on the bus thread).
    package init(bus: Bus, logger: Logger, onChange: @escaping @Sendable ([String: RoamingSource]) -> Void) throws {
        connection = try BusConnection(bus)
        self.logger = logger
        self.onChange = onChange
        try connection.addMatches(BusPeer.objectManagerMatches(
            of: Self.service, under: Self.root, interfaces: Array(Self.followed.keys), properties: modemPropertiesChanged,
            objects: modemsChanged, owner: modemsChanged
        ), context: Unmanaged.passUnretained(self).toOpaque())
    }

    package static func merging(into merger: SnapshotMerger) -> @Sendable ([String: RoamingSource]) -> Void {
        { merger.update(roaming: $0) }
    }

    /// Starts the bus thread and reads ModemManager's modems once.
    package func start() throws {
        try connection.start()
        connection.perform { [self] bus in refresh(bus) }
    }

    package func stop() { connection.stop() }

    /// Reads every modem again and publishes the roaming links; without ModemManager, none roams.
    fileprivate func refresh(_ bus: OpaquePointer) {
        let started = MonotonicClock.microseconds()
        guard let modems = readModems(bus, started: started) else {
            logger.warning("ModemManager: reading the modems took over \(Self.refreshBudgetMicroseconds / 1_000_000) s; keeping the last reading")
            return
        }
        publish(ModemRoaming.roamingLinks(modems))
    }

    /// A PropertiesChanged of a modem or a bearer: reads again when a followed property is among the changed or invalidated ones.
    fileprivate func propertiesChanged(_ message: OpaquePointer) {
        var interface: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &interface) > 0, let interface,
              let followed = Self.followed[String(cString: interface)] else { return }
        guard BusPeer.changes(message, any: [followed]), let bus = sd_bus_message_get_bus(message) else { return }
        refresh(bus)
    }

    fileprivate func refreshFromCallback(_ message: OpaquePointer) {
        guard let bus = sd_bus_message_get_bus(message) else { return }
        refresh(bus)
    }

    private func publish(_ new: [String: RoamingSource]) {
        guard new != values else { return }
        values = new
        logger.info("ModemManager roaming links", metadata: ["links": "\(new.keys.sorted())"])
        onChange(new)
    }

    // MARK: - Reading

    /// The modems in ModemManager's list, each with its registration and its bearers' interfaces; empty without
    /// ModemManager; nil when reading took longer than the budget.
    private func readModems(_ bus: OpaquePointer, started: UInt64) -> [ModemReading]? {
        guard let reply = peer.call(bus, path: Self.root, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects") else { return [] }
        defer { sd_bus_message_unref(reply) }
        var found: [(path: String, registration: UInt32?)] = []
        guard sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "a")), "{oa{sa{sv}}}") > 0 else { return [] }
        var objects = 0
        while objects < Self.maximumObjects, found.count < ModemRoaming.maximumModems,
              sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "e")), "oa{sa{sv}}") > 0 {
            objects += 1
            var path: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "o")), &path) > 0, let path,
                  let modem = Self.readModemInterfaces(reply) else { break }
            if modem.isModem { found.append((String(cString: path), modem.registration)) }
            guard sd_bus_message_exit_container(reply) >= 0 else { break }
        }
        var modems: [ModemReading] = []
        let inTime = { MonotonicClock.microseconds() - started < Self.refreshBudgetMicroseconds }
        for (path, registration) in found {
            var interfaces: [String] = []
            // Only a roaming modem's links matter: a modem at home is not asked for its bearers.
            if let registration, ModemRegistration(rawValue: registration)?.isRoaming == true {
                guard inTime() else { return nil }
                for bearer in bearers(of: path, on: bus) {
                    guard inTime() else { return nil }
                    if let name = bearerInterface(bearer, on: bus) { interfaces.append(name) }
                }
            }
            modems.append(ModemReading(registration: registration, bearerInterfaces: interfaces))
        }
        return modems
    }

    /// One object's `a{sa{sv}}`: whether it is a modem and its 3GPP registration state; nil when malformed.
    private static func readModemInterfaces(_ message: OpaquePointer) -> (isModem: Bool, registration: UInt32?)? {
        guard sd_bus_message_enter_container(message, CChar(UInt8(ascii: "a")), "{sa{sv}}") > 0 else { return nil }
        var isModem = false
        var registration: UInt32?
        while sd_bus_message_enter_container(message, CChar(UInt8(ascii: "e")), "sa{sv}") > 0 {
            var name: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &name) > 0, let name else { return nil }
            switch String(cString: name) {
            case modemInterface:
                isModem = true
                guard sd_bus_message_skip(message, "a{sv}") >= 0 else { return nil }
            case modem3gppInterface:
                guard BusPeer.forEachProperty(message, { key in
                    guard key == "RegistrationState" else { return false }
                    registration = BusPeer.variant(message, "u", BusPeer.uint32)
                    return true
                }) else { return nil }
            default:
                guard sd_bus_message_skip(message, "a{sv}") >= 0 else { return nil }
            }
            guard sd_bus_message_exit_container(message) >= 0 else { return nil }
        }
        guard sd_bus_message_exit_container(message) >= 0 else { return nil }
        return (isModem, registration)
    }

    /// The modem's `Bearers`, at most `ModemRoaming.maximumBearers`.
    private func bearers(of modem: String, on bus: OpaquePointer) -> [String] {
        peer.property(bus, path: modem, interface: Self.modemInterface, name: "Bearers", "ao") {
            BusPeer.objectPaths($0, limit: ModemRoaming.maximumBearers)
        } ?? []
    }

    /// A bearer's `Interface` (the link's name, empty while not connected).
    private func bearerInterface(_ bearer: String, on bus: OpaquePointer) -> String? {
        peer.property(bus, path: bearer, interface: Self.bearerInterface, name: "Interface", "s") { BusPeer.text($0) }
    }
}

private let modemPropertiesChanged: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<ModemManagerRoaming>.fromOpaque(context).takeUnretainedValue().propertiesChanged(message)
    return 0
}

private let modemsChanged: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<ModemManagerRoaming>.fromOpaque(context).takeUnretainedValue().refreshFromCallback(message)
    return 0
}
