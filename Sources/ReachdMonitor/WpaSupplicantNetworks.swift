import CSystemd
import Logging
import ReachdModel
import ReachdSystem

/// wpa_supplicant as a source of the Wi-Fi network each link has joined (issue 50): its interfaces (the root's
/// `Interfaces`), each one's `Ifname`, `State` and `CurrentBSS`, and that BSS's `SSID`, `BSSID` and `IEs`, decided
/// by `WifiStations` (pure). Read at start and again when an interface comes or goes (`InterfaceAdded`,
/// `InterfaceRemoved`), when an interface's `State` or `CurrentBSS` changed, when a current BSS's `IEs`, `SSID` or
/// `BSSID` changed, or when wpa_supplicant appears or leaves the bus.
///
/// wpa_supplicant is a peer like any other: at most `WifiStations.maximumInterfaces` interfaces are read, each
/// call waits at most 1 s, a BSS's elements over 4096 bytes give no hint, and a reading in which a call fails (but
/// for wpa_supplicant not being on the bus) or that takes over `refreshBudgetMicroseconds` is dropped (the last good
/// one stays).
package final class WpaSupplicantNetworks: BusSource, @unchecked Sendable {
    package static let serviceName = "wpa_supplicant"
    package static let withoutService = "no network is known by name from wpa_supplicant"
    static let service = "fi.w1.wpa_supplicant1"
    static let root = "/fi/w1/wpa_supplicant1"
    static let interfaceInterface = "fi.w1.wpa_supplicant1.Interface"
    static let bssInterface = "fi.w1.wpa_supplicant1.BSS"
    static let refreshBudgetMicroseconds: UInt64 = 5_000_000

    private let connection: BusConnection
    private let peer = BusPeer(service: service, timeoutMicroseconds: 1_000_000)
    private let logger: Logger
    private let onChange: @Sendable ([String: WifiNetwork]) -> Void
    // Only touched on the bus thread.
    private var values: [String: WifiNetwork] = [:]
    private var currentBSSes: Set<String> = []

    /// Connects and subscribes; `onChange` gets every new map of interface → network (on the bus thread).
    package init(bus: Bus, logger: Logger, onChange: @escaping @Sendable ([String: WifiNetwork]) -> Void) throws {
        connection = try BusConnection(bus)
        self.logger = logger
        self.onChange = onChange
        try connection.addMatches([
            (BusPeer.signal(from: Self.service, "org.freedesktop.DBus.Properties", "PropertiesChanged", ",path_namespace='\(Self.root)'"),
             wpaPropertiesChanged),
            (BusPeer.signal(from: Self.service, Self.service, "InterfaceAdded"), wpaInterfacesChanged),
            (BusPeer.signal(from: Self.service, Self.service, "InterfaceRemoved"), wpaInterfacesChanged),
            (BusPeer.ownerChanged(of: Self.service), wpaInterfacesChanged),
        ], context: Unmanaged.passUnretained(self).toOpaque())
    }

    package static func merging(into merger: SnapshotMerger) -> @Sendable ([String: WifiNetwork]) -> Void {
        { merger.update(wifi: $0, from: .wpaSupplicant) }
    }

    /// Starts the bus thread and reads wpa_supplicant's interfaces once.
    package func start() throws {
        try connection.start()
        connection.perform { [self] bus in refresh(bus) }
    }

    package func stop() { connection.stop() }

    /// Reads every interface again and publishes the networks; without wpa_supplicant, none.
    fileprivate func refresh(_ bus: OpaquePointer) {
        let started = MonotonicClock.microseconds()
        guard let readings = readInterfaces(bus, inTime: { MonotonicClock.microseconds() - started < Self.refreshBudgetMicroseconds }) else {
            logger.warning("wpa_supplicant: a call failed or reading the interfaces took over \(Self.refreshBudgetMicroseconds / 1_000_000) s; keeping the last reading")
            return
        }
        let new = WifiStations.networks(wpaSupplicant: readings.map(\.reading), previous: values)
        currentBSSes = Set(readings.compactMap(\.bss))
        guard new != values else { return }
        values = new
        logger.info("wpa_supplicant networks", metadata: ["links": "\(new.keys.sorted())"])
        onChange(new)
    }

    /// A PropertiesChanged: reads again when an interface's state or current BSS changed, or a current BSS's own data.
    fileprivate func propertiesChanged(_ message: OpaquePointer) {
        guard let interface = BusPeer.text(message), let path = sd_bus_message_get_path(message).map({ String(cString: $0) }) else { return }
        let relevant = switch interface {
        case Self.interfaceInterface: BusPeer.changes(message, any: ["State", "CurrentBSS"])
        case Self.bssInterface: currentBSSes.contains(path) && BusPeer.changes(message, any: ["IEs", "SSID", "BSSID"])
        default: false
        }
        guard relevant, let bus = sd_bus_message_get_bus(message) else { return }
        refresh(bus)
    }

    fileprivate func refreshFromCallback(_ message: OpaquePointer) {
        guard let bus = sd_bus_message_get_bus(message) else { return }
        refresh(bus)
    }

    // MARK: - Reading

    /// Each interface with the path of its current BSS; empty without wpa_supplicant; nil when a call failed (an
    /// interface or BSS gone since the list was read: its signal reads again) or time ran out.
    private func readInterfaces(_ bus: OpaquePointer, inTime: () -> Bool) -> [(reading: WpaSupplicantReading, bss: String?)]? {
        let paths: [String]
        switch peer.read(bus, path: Self.root, interface: Self.service, name: "Interfaces", "ao", {
            BusPeer.objectPaths($0, limit: WifiStations.maximumInterfaces)
        }) {
        case .value(let found): paths = found
        case .serviceAbsent: return []
        case .failed: return nil
        }
        var readings: [(WpaSupplicantReading, String?)] = []
        for path in paths {
            guard inTime() else { return nil }
            let text = { (name: String, type: Character) in
                self.peer.read(bus, path: path, interface: Self.interfaceInterface, name: name, String(type)) { BusPeer.text($0, type) }.value
            }
            guard let ifname = text("Ifname", "s"), let state = text("State", "s") else { return nil }
            var reading = WpaSupplicantReading(interface: ifname, state: state)
            var bss: String?
            if WifiStations.wpaSupplicantJoined.contains(state) {
                guard let current = text("CurrentBSS", "o") else { return nil }
                bss = current == "/" ? nil : current
            }
            if let bss {
                guard inTime() else { return nil }
                // Read whole up to 64 KiB, so that what is too long is WifiStations' to refuse, not a failed call.
                let bytes = { (name: String) in
                    self.peer.read(bus, path: bss, interface: Self.bssInterface, name: name, "ay") { BusPeer.bytes($0, limit: 65536) }.value
                }
                guard let ssid = bytes("SSID"), let bssid = bytes("BSSID"), let elements = bytes("IEs") else { return nil }
                (reading.ssid, reading.bssid, reading.elements) = (ssid, bssid, elements)
            }
            readings.append((reading, bss))
        }
        return readings
    }
}

private let wpaPropertiesChanged: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<WpaSupplicantNetworks>.fromOpaque(context).takeUnretainedValue().propertiesChanged(message)
    return 0
}

private let wpaInterfacesChanged: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<WpaSupplicantNetworks>.fromOpaque(context).takeUnretainedValue().refreshFromCallback(message)
    return 0
}
