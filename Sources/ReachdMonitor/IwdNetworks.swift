import CSystemd
import Logging
import ReachdModel
import ReachdSystem

/// iwd as a source of the Wi-Fi network each link has joined (issue 50): its stations (its ObjectManager), each
/// one's Device `Name`, Station `State`, `ConnectedNetwork` and `ConnectedAccessPoint`, then that Network's `Name`
/// and that BasicServiceSet's `Address`, decided by `WifiStations` (pure). iwd gives no beacon elements, so no
/// hints. Read at start and again when a station or device comes or goes, when a followed property changed, or
/// when iwd appears or leaves the bus (networks that scans add and remove are not a reason).
///
/// iwd is a peer like any other: at most `maximumObjects` objects of its list and `WifiStations.maximumInterfaces`
/// stations are read, each call waits at most 1 s, and a reading in which a call fails (but for iwd not being on the
/// bus) or that takes over `refreshBudgetMicroseconds` is dropped (the last good one stays).
package final class IwdNetworks: BusSource, @unchecked Sendable {
    package static let serviceName = "iwd"
    package static let withoutService = "no network is known by name from iwd"
    static let service = "net.connman.iwd"
    static let namespace = "/net/connman/iwd"
    static let deviceInterface = "net.connman.iwd.Device"
    static let stationInterface = "net.connman.iwd.Station"
    /// The objects looked at in iwd's list (adapters, devices, every network and access point a scan found).
    static let maximumObjects = 1024
    static let refreshBudgetMicroseconds: UInt64 = 5_000_000
    /// The properties whose change is a reason to read again, by interface.
    private static let followed: [String: Set<String>] = [
        stationInterface: ["State", "ConnectedNetwork", "ConnectedAccessPoint"], deviceInterface: ["Name"],
    ]

    private let connection: BusConnection
    private let peer = BusPeer(service: service, timeoutMicroseconds: 1_000_000)
    private let logger: Logger
    private let onChange: @Sendable ([String: WifiNetwork]) -> Void
    // Only touched on the bus thread.
    private var values: [String: WifiNetwork] = [:]

    /// Connects and subscribes; `onChange` gets every new map of interface → network (on the bus thread).
    package init(bus: Bus, logger: Logger, onChange: @escaping @Sendable ([String: WifiNetwork]) -> Void) throws {
        connection = try BusConnection(bus)
        self.logger = logger
        self.onChange = onChange
        try connection.addMatches(BusPeer.objectManagerMatches(
            of: Self.service, under: Self.namespace, interfaces: Array(Self.followed.keys), properties: iwdPropertiesChanged,
            objects: iwdObjectsChanged, owner: iwdOwnerChanged
        ), context: Unmanaged.passUnretained(self).toOpaque())
    }

    package static func merging(into merger: SnapshotMerger) -> @Sendable ([String: WifiNetwork]) -> Void {
        { merger.update(wifi: $0, from: .iwd) }
    }

    /// Starts the bus thread and reads iwd's stations once.
    package func start() throws {
        try connection.start()
        connection.perform { [self] bus in refresh(bus) }
    }

    package func stop() { connection.stop() }

    /// Reads every station again and publishes the networks; without iwd, none.
    fileprivate func refresh(_ bus: OpaquePointer) {
        let started = MonotonicClock.microseconds()
        guard let readings = readStations(bus, inTime: { MonotonicClock.microseconds() - started < Self.refreshBudgetMicroseconds }) else {
            logger.warning("iwd: a call failed or reading the stations took over \(Self.refreshBudgetMicroseconds / 1_000_000) s; keeping the last reading")
            return
        }
        let new = WifiStations.networks(iwd: readings)
        guard new != values else { return }
        values = new
        logger.info("iwd networks", metadata: ["links": "\(new.keys.sorted())"])
        onChange(new)
    }

    /// A PropertiesChanged of a station or a device: reads again when a followed property changed.
    fileprivate func propertiesChanged(_ message: OpaquePointer) {
        guard let interface = BusPeer.text(message), let followed = Self.followed[interface],
              BusPeer.changes(message, any: followed), let bus = sd_bus_message_get_bus(message) else { return }
        refresh(bus)
    }

    /// InterfacesAdded (`oa{sa{sv}}`) or InterfacesRemoved (`oas`): reads again when a station or device came or went.
    fileprivate func objectsChanged(_ message: OpaquePointer) {
        guard BusPeer.text(message, "o") != nil else { return }
        let added = sd_bus_message_is_signal(message, "org.freedesktop.DBus.ObjectManager", "InterfacesAdded") > 0
        var names: [String] = []
        if added, sd_bus_message_enter_container(message, CChar(UInt8(ascii: "a")), "{sa{sv}}") > 0 {
            while names.count < 16, sd_bus_message_enter_container(message, CChar(UInt8(ascii: "e")), "sa{sv}") > 0,
                  let name = BusPeer.text(message), sd_bus_message_skip(message, "a{sv}") >= 0, sd_bus_message_exit_container(message) >= 0 {
                names.append(name)
            }
        } else if !added, sd_bus_message_enter_container(message, CChar(UInt8(ascii: "a")), "s") > 0 {
            while names.count < 16, let name = BusPeer.text(message) { names.append(name) }
        }
        guard names.contains(where: Self.followed.keys.contains), let bus = sd_bus_message_get_bus(message) else { return }
        refresh(bus)
    }

    fileprivate func refreshFromCallback(_ message: OpaquePointer) {
        guard let bus = sd_bus_message_get_bus(message) else { return }
        refresh(bus)
    }

    // MARK: - Reading

    /// A station in iwd's list: its object, device name, state and the objects it is connected to.
    private struct Station {
        var interface: String?
        var state: String?
        var network: String?
        var accessPoint: String?
    }

    /// Every station with its network's name and access point's address; empty without iwd; nil when a call failed
    /// (an object gone since the list was read: its signal reads again) or time ran out.
    private func readStations(_ bus: OpaquePointer, inTime: () -> Bool) -> [IwdStationReading]? {
        let stations: [Station]
        switch peer.ask(bus, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects") {
        case .value(let reply):
            defer { sd_bus_message_unref(reply) }
            stations = Self.stations(in: reply)
        case .serviceAbsent: return []
        case .failed: return nil
        }
        var readings: [IwdStationReading] = []
        for station in stations {
            guard let interface = station.interface, let state = station.state else { continue }
            guard inTime() else { return nil }
            var reading = IwdStationReading(interface: interface, state: state)
            if let path = station.network {
                let name = peer.read(bus, path: path, interface: "net.connman.iwd.Network", name: "Name", "s") { BusPeer.text($0, limit: 256) }
                guard let name = name.value else { return nil }
                reading.networkName = name
            }
            if let path = station.accessPoint {
                let address = peer.read(bus, path: path, interface: "net.connman.iwd.BasicServiceSet", name: "Address", "s") { BusPeer.text($0, limit: 64) }
                guard let address = address.value else { return nil }
                reading.bssid = address
            }
            readings.append(reading)
        }
        return readings
    }

    /// The stations in a GetManagedObjects reply (`a{oa{sa{sv}}}`), at most `WifiStations.maximumInterfaces`.
    private static func stations(in reply: OpaquePointer) -> [Station] {
        var stations: [Station] = []
        guard sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "a")), "{oa{sa{sv}}}") > 0 else { return [] }
        var objects = 0
        while objects < maximumObjects, stations.count < WifiStations.maximumInterfaces,
              sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "e")), "oa{sa{sv}}") > 0 {
            objects += 1
            guard BusPeer.text(reply, "o") != nil, let station = readObject(reply) else { break }
            if station.state != nil { stations.append(station) }
            guard sd_bus_message_exit_container(reply) >= 0 else { break }
        }
        return stations
    }

    /// One object's `a{sa{sv}}`: what its Device and Station interfaces say (`state` nil when it has no Station);
    /// nil when malformed.
    private static func readObject(_ message: OpaquePointer) -> Station? {
        guard sd_bus_message_enter_container(message, CChar(UInt8(ascii: "a")), "{sa{sv}}") > 0 else { return nil }
        var station = Station()
        while sd_bus_message_enter_container(message, CChar(UInt8(ascii: "e")), "sa{sv}") > 0 {
            guard let name = BusPeer.text(message) else { return nil }
            let read = { (key: String, type: Character) -> String? in BusPeer.variant(message, String(type)) { BusPeer.text($0, type, limit: 256) } }
            let walked: Bool
            switch name {
            case deviceInterface:
                walked = BusPeer.forEachProperty(message) { key in
                    guard key == "Name" else { return false }
                    station.interface = read(key, "s")
                    return true
                }
            case stationInterface:
                station.state = station.state ?? ""
                walked = BusPeer.forEachProperty(message) { key in
                    switch key {
                    case "State": station.state = read(key, "s") ?? ""
                    case "ConnectedNetwork": station.network = read(key, "o")
                    case "ConnectedAccessPoint": station.accessPoint = read(key, "o")
                    default: return false
                    }
                    return true
                }
            default:
                walked = sd_bus_message_skip(message, "a{sv}") >= 0
            }
            guard walked, sd_bus_message_exit_container(message) >= 0 else { return nil }
        }
        guard sd_bus_message_exit_container(message) >= 0 else { return nil }
        return station
    }
}

private let iwdPropertiesChanged: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<IwdNetworks>.fromOpaque(context).takeUnretainedValue().propertiesChanged(message)
    return 0
}

private let iwdObjectsChanged: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<IwdNetworks>.fromOpaque(context).takeUnretainedValue().objectsChanged(message)
    return 0
}

private let iwdOwnerChanged: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<IwdNetworks>.fromOpaque(context).takeUnretainedValue().refreshFromCallback(message)
    return 0
}
