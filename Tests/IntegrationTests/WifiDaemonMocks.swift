import Foundation
import XCTest

/// iwd as a plain python-dbusmock object manager (no template ships for it) on the test's private bus, which reachd
/// reads as its system bus: the real service's name, paths, interfaces and signals (iwd's doc/*-api.txt; signals as
/// ell sends them: one PropertiesChanged per interface and turn, dropped optional properties as invalidated).
/// Differs from iwd: no org.freedesktop.DBus.Properties entries in InterfacesAdded, no StationDiagnostic, KnownNetwork
/// or Affinities, device paths count from 1 (iwd's are ifindexes), and dbusmock's extra interface and MethodCalled signal.
final class IwdMock {
    static let service = "net.connman.iwd"
    static let adapterPath = "/net/connman/iwd/0"
    private static let station = "net.connman.iwd.Station"
    private static let network = "net.connman.iwd.Network"

    private let daemon: DBusMockDaemon
    /// Device path by interface name; BSS paths by network path (its ExtendedServiceSet); the network each station is on.
    private var stations: [String: String] = [:]
    private var networks: [String: [String]] = [:]
    private var connections: [String: String] = [:]

    init(bus: PrivateBus, directory: String) {
        daemon = DBusMockDaemon(bus: bus, service: Self.service, root: "/", log: directory + "/iwd.log",
                                arguments: ["-m", Self.service, "/", "org.freedesktop.DBus.ObjectManager"])
    }

    /// Starts iwd (the mock) with its adapter (phy0) and waits until it owns its name.
    func start() throws {
        (stations, networks, connections) = ([:], [:], [:])
        try daemon.start()
        try add(Self.adapterPath, ["net.connman.iwd.Adapter": [
            "Powered": ["b", "true"], "Name": ["s", "phy0"], "SupportedModes": ["as", "3", "ad-hoc", "station", "ap"],
        ]])
    }

    /// iwd leaves the bus.
    func stop() { daemon.stop() }

    /// A powered station-mode Device, disconnected, announced with InterfacesAdded.
    func addStation(interface: String) throws {
        let path = Self.adapterPath + "/\(stations.count + 1)"
        stations[interface] = path
        try add(path, [
            "net.connman.iwd.Device": [
                "Name": ["s", interface], "Address": ["s", String(format: "02:00:00:00:00:%02x", stations.count)],
                "Powered": ["b", "true"], "Adapter": ["o", Self.adapterPath], "Mode": ["s", "station"],
            ],
            Self.station: ["Scanning": ["b", "false"], "State": ["s", "disconnected"]],
        ])
    }

    /// Connects to the network `name` (UTF-8, as iwd lists only those) of `type` ("open", "psk", "8021x") through
    /// `bssid` (02:11:22:33:44:55): the Network (if new) and BSS appear as a scan makes them, then State
    /// "connecting" with ConnectedNetwork and ConnectedAccessPoint, the Network's Connected, State "connected".
    func join(interface: String, name: String, type: String, bssid: String) throws {
        let station = try path(of: interface)
        let network = station + "/" + name.utf8.map { String(format: "%02x", $0) }.joined() + "_" + type
        let bss = Self.bssPath(network, bssid)
        if networks[network] == nil {
            networks[network] = []
            try add(network, [Self.network: [
                "Name": ["s", name], "Connected": ["b", "false"], "Device": ["o", station], "Type": ["s", type],
                "ExtendedServiceSet": ["ao", "1", bss],
            ]])
        }
        try addBSS(bss, bssid, of: network)
        connections[interface] = network
        try daemon.change(station, Self.station, ["State": ["s", "connecting"], "ConnectedNetwork": ["o", network], "ConnectedAccessPoint": ["o", bss]])
        try daemon.change(network, Self.network, ["Connected": ["b", "true"]])
        try daemon.change(station, Self.station, ["State": ["s", "connected"]])
    }

    /// Roams to `bssid` of the same network: a new BSS if unseen, then State "roaming" with the new
    /// ConnectedAccessPoint, then State "connected".
    func roam(interface: String, bssid: String) throws {
        let station = try path(of: interface)
        guard let network = connections[interface] else { throw LabError("iwd mock: \(interface) is not connected") }
        let bss = Self.bssPath(network, bssid)
        try addBSS(bss, bssid, of: network)
        try daemon.change(station, Self.station, ["State": ["s", "roaming"], "ConnectedAccessPoint": ["o", bss]])
        try daemon.change(station, Self.station, ["State": ["s", "connected"]])
    }

    /// Loses the connection as iwd reports a link loss: one PropertiesChanged with State "disconnected" that
    /// invalidates ConnectedNetwork and ConnectedAccessPoint (gone from the object too), then the Network's
    /// Connected false. Network and BSS objects stay, as the scan results do.
    func leave(interface: String) throws {
        let station = try path(of: interface)
        guard let network = connections.removeValue(forKey: interface) else { throw LabError("iwd mock: \(interface) is not connected") }
        try daemon.change(station, Self.station, ["State": ["s", "disconnected"]], invalidating: ["ConnectedNetwork", "ConnectedAccessPoint"])
        try daemon.change(network, Self.network, ["Connected": ["b", "false"]])
    }

    /// Stops the mock; the bus is the test's.
    func tearDown() { stop() }

    private func path(of interface: String) throws -> String {
        guard let path = stations[interface] else { throw LabError("iwd mock: no station \(interface)") }
        return path
    }

    /// iwd names a BSS by its address's hex digits under its network.
    private static func bssPath(_ network: String, _ bssid: String) -> String {
        network + "/" + bssid.lowercased().replacingOccurrences(of: ":", with: "")
    }

    /// The BSS object, unless the network has it, and the network's ExtendedServiceSet changed.
    private func addBSS(_ path: String, _ bssid: String, of network: String) throws {
        guard var bsses = networks[network], !bsses.contains(path) else { return }
        bsses.append(path)
        networks[network] = bsses
        try add(path, ["net.connman.iwd.BasicServiceSet": ["Address": ["s", bssid.lowercased()]]])
        try daemon.change(network, Self.network, ["ExtendedServiceSet": ["ao", "\(bsses.count)"] + bsses])
    }

    /// An object announced with the ObjectManager's InterfacesAdded.
    private func add(_ path: String, _ interfaces: KeyValuePairs<String, DBusMockDaemon.Properties>) throws {
        try daemon.add(path, interfaces)
        try daemon.emit("/", "org.freedesktop.DBus.ObjectManager", "InterfacesAdded", "oa{sa{sv}}", [
            ["o", path], ["a{sa{sv}}", "\(interfaces.count)"] + interfaces.flatMap { [$0.key] + DBusMockDaemon.dictionary($0.value) },
        ])
    }
}

/// wpa_supplicant as a plain python-dbusmock object (no template ships for it) on the test's private bus: the real
/// service's name, paths, interfaces and signals (doc/dbus.doxygen, wpa_supplicant/dbus/dbus_new*.c). Like wpa_supplicant,
/// each property change is sent twice: org.freedesktop.DBus.Properties.PropertiesChanged and the deprecated
/// PropertiesChanged(a{sv}) of the object's own interface. Differs: a subset of the properties (no Capabilities,
/// CurrentNetwork, Networks, CurrentAuthMode, DisconnectReason…), and dbusmock's extra interface and MethodCalled signal.
final class WpaSupplicantMock {
    static let service = "fi.w1.wpa_supplicant1"
    static let rootPath = "/fi/w1/wpa_supplicant1"
    private static let interface = "fi.w1.wpa_supplicant1.Interface"

    private let daemon: DBusMockDaemon
    /// Per interface name: its object, its BSS objects, the SSID it is on.
    private var interfaces: [String: (path: String, bsses: [String], ssid: [UInt8]?)] = [:]

    init(bus: PrivateBus, directory: String) {
        daemon = DBusMockDaemon(bus: bus, service: Self.service, root: Self.rootPath, log: directory + "/wpa_supplicant.log",
                                arguments: [Self.service, Self.rootPath, Self.service])
    }

    /// Starts wpa_supplicant (the mock) with no interface and waits until it owns its name.
    func start() throws {
        interfaces = [:]
        try daemon.start()
        try daemon.store(Self.rootPath, Self.service, [
            "DebugLevel": ["s", "info"], "DebugTimestamp": ["b", "false"], "DebugShowKeys": ["b", "false"], "Interfaces": ["ao", "0"],
        ])
    }

    /// wpa_supplicant leaves the bus.
    func stop() { daemon.stop() }

    /// An Interface object, disconnected, in the root's Interfaces and announced with InterfaceAdded(o, a{sv}).
    /// Interfaces changes quietly: wpa_supplicant sends no PropertiesChanged for it.
    func addInterface(_ ifname: String) throws {
        let path = Self.rootPath + "/Interfaces/\(interfaces.count)"
        interfaces[ifname] = (path, [], nil)
        let properties: DBusMockDaemon.Properties = [
            "State": ["s", "disconnected"], "Scanning": ["b", "false"], "Ifname": ["s", ifname], "Driver": ["s", "nl80211"],
            "CurrentBSS": ["o", "/"], "BSSs": ["ao", "0"],
        ]
        try daemon.add(path, [Self.interface: properties])
        let paths = (0..<interfaces.count).map { Self.rootPath + "/Interfaces/\($0)" }
        try daemon.store(Self.rootPath, Self.service, ["Interfaces": ["ao", "\(paths.count)"] + paths])
        try daemon.emit(Self.rootPath, Self.service, "InterfaceAdded", "oa{sv}", [["o", path], ["a{sv}"] + DBusMockDaemon.dictionary(properties)])
    }

    /// Connects to `ssid` (any bytes) through `bssid` (6 bytes) whose information elements are `elements`: a BSS object
    /// (BSSAdded(o, a{sv}), BSSs changed), then State "associated" with CurrentBSS, then State "completed".
    func join(_ ifname: String, ssid: [UInt8], bssid: [UInt8], elements: [UInt8]) throws {
        var interface = try lookup(ifname)
        let bss = interface.path + "/BSSs/\(interface.bsses.count)"
        interface.bsses.append(bss)
        interface.ssid = ssid
        interfaces[ifname] = interface
        let properties: DBusMockDaemon.Properties = [
            "SSID": Self.bytes(ssid), "BSSID": Self.bytes(bssid), "Mode": ["s", "infrastructure"], "IEs": Self.bytes(elements),
        ]
        try daemon.add(bss, ["fi.w1.wpa_supplicant1.BSS": properties])
        try daemon.emit(interface.path, Self.interface, "BSSAdded", "oa{sv}", [["o", bss], ["a{sv}"] + DBusMockDaemon.dictionary(properties)])
        try change(interface.path, ["BSSs": ["ao", "\(interface.bsses.count)"] + interface.bsses])
        try change(interface.path, ["State": ["s", "associated"], "CurrentBSS": ["o", bss]])
        try change(interface.path, ["State": ["s", "completed"]])
    }

    /// Roams to another BSS of the SSID it is on, as `join` connects.
    func roam(_ ifname: String, bssid: [UInt8], elements: [UInt8]) throws {
        guard let ssid = try lookup(ifname).ssid else { throw LabError("wpa_supplicant mock: \(ifname) is not connected") }
        try join(ifname, ssid: ssid, bssid: bssid, elements: elements)
    }

    /// The current access point's beacon says something else: its BSS's IEs, announced with PropertiesChanged.
    func changeElements(_ ifname: String, _ elements: [UInt8]) throws {
        let interface = try lookup(ifname)
        guard interface.ssid != nil, let bss = interface.bsses.last else { throw LabError("wpa_supplicant mock: \(ifname) is not connected") }
        try daemon.change(bss, "fi.w1.wpa_supplicant1.BSS", ["IEs": Self.bytes(elements)])
    }

    /// State "disconnected" and CurrentBSS "/"; the BSS objects stay, as the scan results do.
    func leave(_ ifname: String) throws {
        let path = try lookup(ifname).path
        interfaces[ifname]?.ssid = nil
        try change(path, ["State": ["s", "disconnected"], "CurrentBSS": ["o", "/"]])
    }

    /// Stops the mock; the bus is the test's.
    func tearDown() { stop() }

    private func lookup(_ ifname: String) throws -> (path: String, bsses: [String], ssid: [UInt8]?) {
        guard let interface = interfaces[ifname] else { throw LabError("wpa_supplicant mock: no interface \(ifname)") }
        return interface
    }

    /// A change of the Interface's properties, sent both ways as wpa_supplicant does.
    private func change(_ path: String, _ properties: DBusMockDaemon.Properties) throws {
        try daemon.change(path, Self.interface, properties)
        try daemon.emit(path, Self.interface, "PropertiesChanged", "a{sv}", [["a{sv}"] + DBusMockDaemon.dictionary(properties)])
    }

    private static func bytes(_ bytes: [UInt8]) -> [String] { ["ay", "\(bytes.count)"] + bytes.map { "\($0)" } }
}

/// A plain python-dbusmock service on a private bus, built with busctl calls of its control interface
/// (org.freedesktop.DBus.Mock). dbusmock can neither drop a property nor change one without a signal, and its
/// UpdateProperties fails on object paths (0.38.1): a method added to the root object, StoreProperties, stores and
/// drops quietly, and the signals are sent with EmitSignal, exactly as the daemons send them.
private final class DBusMockDaemon {
    /// Properties in busctl's form, in the daemon's order: name → signature and value(s).
    typealias Properties = KeyValuePairs<String, [String]>
    private static let control = "org.freedesktop.DBus.Mock"
    private static let storeCode = """
        o = objects[args[0]]
        for name, value in args[2].items(): o._set_property(args[1], name, value)
        for name in args[3]: del o.props[args[1]][name]
        """

    private let bus: PrivateBus
    private let service: String, root: String, log: String, arguments: [String]
    private var process: SpawnedProcess?

    init(bus: PrivateBus, service: String, root: String, log: String, arguments: [String]) {
        self.bus = bus
        self.service = service
        self.root = root
        self.log = log
        self.arguments = arguments
    }

    /// Skips (saying why) without python-dbusmock or busctl; starts the mock and waits until it owns `service`.
    func start() throws {
        guard FileManager.default.fileExists(atPath: ModemManagerMock.pythonPath + "/dbusmock/mockobject.py") else {
            throw XCTSkip("python-dbusmock is not in \(ModemManagerMock.pythonPath): run `make deps`")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/busctl") else { throw XCTSkip("busctl is not installed (Debian package systemd)") }
        try FileManager.default.createDirectory(atPath: (log as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        process = try SpawnedProcess(["/usr/bin/python3", "-m", "dbusmock", "--system"] + arguments, environment: [
            "DBUS_SYSTEM_BUS_ADDRESS": bus.address, "PYTHONPATH": ModemManagerMock.pythonPath, "PATH": "/usr/bin:/bin",
        ], output: log)
        try bus.waitForOwner(of: service)
        try call(root, "AddMethod", ["sssss", Self.control, "StoreProperties", "osa{sv}as", "", Self.storeCode])
    }

    func stop() {
        process?.stop()
        process = nil
    }

    /// An object with `interfaces` (the first its main one), quietly.
    func add(_ path: String, _ interfaces: KeyValuePairs<String, Properties>) throws {
        try call(root, "AddObject", ["ssa{sv}a(ssss)", path, interfaces[0].key, "0", "0"])
        for (interface, properties) in interfaces { try store(path, interface, properties) }
    }

    /// Sets `properties` of `interface` on `path` and drops `dropped`, quietly.
    func store(_ path: String, _ interface: String, _ properties: Properties, dropping dropped: [String] = []) throws {
        try call(root, "StoreProperties", ["osa{sv}as", path, interface] + Self.dictionary(properties) + ["\(dropped.count)"] + dropped)
    }

    /// Stores `properties`, drops `invalidated`, and sends one PropertiesChanged with both.
    func change(_ path: String, _ interface: String, _ properties: Properties, invalidating invalidated: [String] = []) throws {
        try store(path, interface, properties, dropping: invalidated)
        try emit(path, "org.freedesktop.DBus.Properties", "PropertiesChanged", "sa{sv}as", [
            ["s", interface], ["a{sv}"] + Self.dictionary(properties), ["as", "\(invalidated.count)"] + invalidated,
        ])
    }

    /// The signal `interface`.`name` from `path`; each argument is its signature and value(s) in busctl's form.
    func emit(_ path: String, _ interface: String, _ name: String, _ signature: String, _ arguments: [[String]]) throws {
        try call(path, "EmitSignal", ["sssav", interface, name, signature, "\(arguments.count)"] + arguments.flatMap { $0 })
    }

    /// `properties` as busctl's a{sv}.
    static func dictionary(_ properties: Properties) -> [String] {
        ["\(properties.count)"] + properties.flatMap { [$0.key] + $0.value }
    }

    /// A control method on `path`; `--` lets values start with a dash.
    private func call(_ path: String, _ method: String, _ arguments: [String]) throws {
        let call = ["--address=\(bus.address)", "--", "call", service, path, Self.control, method] + arguments
        let result = try CommandLineIntegrationTests.run("/usr/bin/busctl", call)
        guard result.status == 0 else { throw LabError("busctl \(call.dropFirst(2).joined(separator: " ")): \(result.err)") }
    }
}
