import ReachdModel
import ReachdServiceKit
import ReachdSystem

/// What reachd's NetworkManager face serves, as a pure value of the internet verdict and the snapshot it was
/// judged from (docs/networkmanager-face.md has the table): the manager's properties, one device per link
/// that is not ignored (`Devices/IFINDEX`), and one active connection for the path to the internet
/// (`ActiveConnection/IFINDEX`). Every reader is served from the one value the bus thread holds.
struct NetworkManagerFaceState: Equatable {
    static let managerPath = "/org/freedesktop/NetworkManager"
    static let devicesPrefix = managerPath + "/Devices"
    static let activePrefix = managerPath + "/ActiveConnection"
    /// What `Version` says: NetworkManager's API level, then that reachd answers (readers that want to know
    /// look for `-reachd`; NetworkManagerMetered does, so that reachd never reads its own face).
    static let version = "1.42.0-reachd-\(PackageVersion.current)"

    typealias Properties = [String: BusMessage.Value]

    var manager: Properties
    /// By object path.
    var devices: [String: Properties]
    /// By object path: none, or the connection of the interface the verdict goes through.
    var active: [String: Properties]
    /// By device path: the type-specific interface libnm builds its device objects from, and its properties.
    var typedInterfaces: [String: String]
    var typedProperties: [String: Properties]

    /// `verdict` nil: reachd has not judged the network yet (State and Connectivity unknown).
    /// `checking`: a connectivity check is configured.
    init(verdict: Verdict?, snapshot: NetworkSnapshot, classifier: InterfaceClassifier, checking: Bool) {
        let connectivity = Self.connectivity(of: verdict)
        var devices: [String: Properties] = [:]
        var typedInterfaces: [String: String] = [:], typedProperties: [String: Properties] = [:]
        var anyActivated = false
        var primary: (path: String, link: LinkInfo, type: String)?
        for link in snapshot.links.values.sorted(by: { $0.index < $1.index }) {
            let judged = classifier.classify(link, in: snapshot)
            guard !judged.ignored else { continue }
            let kind = DeviceKind(link: link, kind: judged.kind)
            let state = Self.deviceState(of: link, in: snapshot)
            anyActivated = anyActivated || state == 100
            let isPrimary = verdict?.reachable == true && verdict?.interface == link.name
            let activePath = isPrimary ? "\(Self.activePrefix)/\(link.index)" : "/"
            if isPrimary { primary = (activePath, link, kind.connectionType) }
            let family = { (family: FamilyVerdict?) -> UInt32 in
                guard state == 100 else { return 0 }
                return family?.reachable == true && family?.interface == link.name ? connectivity : 1
            }
            let path = "\(Self.devicesPrefix)/\(link.index)"
            (typedInterfaces[path], typedProperties[path]) = (kind.typedInterface, kind.typedProperties(of: link))
            devices[path] = [
                "Udi": .string("/sys/class/net/\(link.name)"),
                "Path": .string(""),
                "Interface": .string(link.name),
                "IpInterface": .string(link.name),
                "Driver": .string(link.sysfs.driver ?? link.linkKind ?? "unknown"),
                "DeviceType": .uint32(kind.deviceType),
                "Metered": .uint32(Self.managerMetered(
                    judged.meteredState, roaming: snapshot.roaming[link.name] != nil, budget: snapshot.budgets[link.name]?.state
                )),
                "State": .uint32(state),
                // libnm takes a device's state from here (reason 0: none given).
                "StateReason": .uint32Pair(state, 0),
                "ActiveConnection": .objectPath(activePath),
                "Ip4Connectivity": .uint32(family(verdict?.ipv4)),
                "Ip6Connectivity": .uint32(family(verdict?.ipv6)),
                "Managed": .bool(true),
                "Autoconnect": .bool(false),
                "Real": .bool(true),
                "Ip4Config": .objectPath("/"),
                "Ip6Config": .objectPath("/"),
                "Dhcp4Config": .objectPath("/"),
                "Dhcp6Config": .objectPath("/"),
                "AvailableConnections": .objectPaths([]),
            ]
        }
        self.devices = devices
        self.typedInterfaces = typedInterfaces
        self.typedProperties = typedProperties
        var active: [String: Properties] = [:]
        if let primary, let verdict {
            active[primary.path] = [
                "Connection": .objectPath("/"),
                "SpecificObject": .objectPath("/"),
                // nmcli's NAME: the Wi-Fi network's, where iwd or wpa_supplicant says which (issue 50).
                "Id": .string(snapshot.wifi[primary.link.name]?.identity.name ?? primary.link.name),
                "Uuid": .string(Self.uuid(of: primary.link.name)),
                "Type": .string(primary.type),
                "Devices": .objectPaths(["\(Self.devicesPrefix)/\(primary.link.index)"]),
                "State": .uint32(2),
                "StateFlags": .uint32(0),
                "Default": .bool(verdict.ipv4.reachable && verdict.ipv4.interface == primary.link.name),
                "Default6": .bool(verdict.ipv6.reachable && verdict.ipv6.interface == primary.link.name),
                "Vpn": .bool(false),
                "Ip4Config": .objectPath("/"),
                "Ip6Config": .objectPath("/"),
                "Dhcp4Config": .objectPath("/"),
                "Dhcp6Config": .objectPath("/"),
                "Master": .objectPath("/"),
            ]
        }
        self.active = active
        let devicePaths = devices.keys.sorted(by: Self.numerically)
        manager = [
            "Devices": .objectPaths(devicePaths),
            "AllDevices": .objectPaths(devicePaths),
            "Checkpoints": .objectPaths([]),
            "NetworkingEnabled": .bool(true),
            "WirelessEnabled": .bool(true),
            "WirelessHardwareEnabled": .bool(true),
            "WwanEnabled": .bool(true),
            "WwanHardwareEnabled": .bool(true),
            "ActiveConnections": .objectPaths(active.keys.sorted()),
            "PrimaryConnection": .objectPath(primary?.path ?? "/"),
            "PrimaryConnectionType": .string(primary?.type ?? ""),
            "Metered": .uint32(verdict.map { Self.managerMetered($0.meteredState, roaming: $0.roaming, budget: $0.budget?.state) } ?? 0),
            "ActivatingConnection": .objectPath("/"),
            "Startup": .bool(false),
            "Version": .string(Self.version),
            "State": .uint32(Self.state(of: verdict, connectivity: connectivity, anyActivated: anyActivated)),
            "Connectivity": .uint32(connectivity),
            "ConnectivityCheckAvailable": .bool(checking),
            "ConnectivityCheckEnabled": .bool(checking),
            "ConnectivityCheckUri": .string(""),
        ]
    }

    /// The properties of the object at `path` (any of the three kinds); nil when there is none.
    func properties(at path: String) -> Properties? {
        path == Self.managerPath ? manager : devices[path] ?? active[path]
    }

    /// Property `name` of `interface` at `path`: the manager's, a device's (its type-specific interface's too)
    /// or the active connection's.
    func value(of name: String, interface: String, at path: String) -> BusMessage.Value? {
        typedInterfaces[path] == interface ? typedProperties[path]?[name] : properties(at: path)?[name]
    }

    /// Whether the object at `path` below the manager has `interface`.
    func has(_ interface: String, at path: String) -> Bool {
        switch interface {
        case "org.freedesktop.NetworkManager.Device": devices[path] != nil
        case "org.freedesktop.NetworkManager.Connection.Active": active[path] != nil
        default: typedInterfaces[path] == interface
        }
    }

    /// Every object path but the manager's, devices first, in a stable order.
    var childPaths: [String] { devices.keys.sorted(by: Self.numerically) + active.keys.sorted(by: Self.numerically) }

    /// `NMConnectivityState`: 4 full (reachd's `full`, and `unknown` while reachable, as NetworkManager
    /// reports a default route without a check), 3 limited, 2 portal, 1 none, 0 unknown (not judged yet).
    static func connectivity(of verdict: Verdict?) -> UInt32 {
        guard let verdict else { return 0 }
        guard verdict.reachable else { return 1 }
        switch verdict.connectivity {
        case .full, .unknown: return 4
        case .limited: return 3
        case .portal: return 2
        case .none: return 1
        }
    }

    /// `NMState`: 70 connected global, 60 connected site (portal or limited), 50 connected local (a link is
    /// up with an address, no way out), 20 disconnected, 0 unknown (not judged yet).
    static func state(of verdict: Verdict?, connectivity: UInt32, anyActivated: Bool) -> UInt32 {
        guard let verdict else { return 0 }
        if verdict.reachable { return connectivity == 4 ? 70 : 60 }
        return anyActivated ? 50 : 20
    }

    /// `NMMetered` of a link: its metered state, except that a roaming link or one over its data budget, which
    /// NetworkManager has no word for, is `yes` where its state says not metered (`ConnectionCost.countsAsMetered`).
    static func managerMetered(_ state: MeteredState, roaming: Bool, budget: BudgetState?) -> UInt32 {
        !state.isMetered && ConnectionCost.countsAsMetered(meteredState: state, roaming: roaming, budget: budget)
            ? ManagerMetered.yes.rawValue : managerMetered(state)
    }

    /// `NMMetered`: unknown 0, yes 1, no 2, guess-yes 3, guess-no 4.
    static func managerMetered(_ state: MeteredState) -> UInt32 {
        switch state {
        case .unknown: ManagerMetered.unknown.rawValue
        case .yes: ManagerMetered.yes.rawValue
        case .no: ManagerMetered.no.rawValue
        case .guessYes: ManagerMetered.guessYes.rawValue
        case .guessNo: ManagerMetered.guessNo.rawValue
        }
    }

    /// `NMDeviceState`: 100 activated (operational with a global address), 30 disconnected (operational,
    /// no global address), 20 unavailable (down or no carrier).
    static func deviceState(of link: LinkInfo, in snapshot: NetworkSnapshot) -> UInt32 {
        guard link.notOperationalReason == nil else { return 20 }
        let global = snapshot.addresses.contains {
            $0.interfaceIndex == link.index && $0.scope == InterfaceAddress.scopeUniverse
                && $0.flags.isDisjoint(with: [.tentative, .dadFailed])
        }
        return global ? 100 : 30
    }

    /// A stable UUID-shaped name for the active connection of `name` (two FNV-1a hashes).
    static func uuid(of name: String) -> String {
        func fnv(_ seed: UInt64) -> UInt64 {
            var hash = seed
            for byte in "reachd:\(name)".utf8 { hash = (hash ^ UInt64(byte)) &* 0x100000001b3 }
            return hash
        }
        let hex = String(fnv(0xcbf29ce484222325), radix: 16).leftPadded(16) + String(fnv(0x84222325cbf29ce4), radix: 16).leftPadded(16)
        let digits = Array(hex)
        func part(_ range: Range<Int>) -> String { String(digits[range]) }
        return "\(part(0..<8))-\(part(8..<12))-4\(part(13..<16))-8\(part(17..<20))-\(part(20..<32))"
    }

    /// Paths ordered by their number (`Devices/2` before `Devices/10`).
    private static func numerically(_ a: String, _ b: String) -> Bool {
        let left = Int(a.split(separator: "/").last ?? "") ?? 0, right = Int(b.split(separator: "/").last ?? "") ?? 0
        return (left, a) < (right, b)
    }
}

/// NetworkManager's device type, connection type and type-specific device interface of a link.
struct DeviceKind: Equatable {
    /// `NMDeviceType`.
    var deviceType: UInt32
    /// The active connection's `Type` (the setting name).
    var connectionType: String

    init(link: LinkInfo, kind: InterfaceKind) {
        if link.sysfs.devtype == "bluetooth" {
            (deviceType, connectionType) = (5, "bluetooth")
            return
        }
        switch (kind, link.linkKind) {
        case (.wifi, _): (deviceType, connectionType) = (2, "802-11-wireless")
        case (.wwan, _): (deviceType, connectionType) = (8, "gsm")
        case (_, "wireguard"): (deviceType, connectionType) = (29, "wireguard")
        case (_, "tun"), (_, "tap"): (deviceType, connectionType) = (16, "tun")
        case (_, "bridge"): (deviceType, connectionType) = (13, "bridge")
        case (_, "vlan"): (deviceType, connectionType) = (11, "vlan")
        case (.wired, _): (deviceType, connectionType) = (1, "802-3-ethernet")
        case (.other, _): (deviceType, connectionType) = (14, "generic")
        }
    }
}

extension DeviceKind {
    /// The type-specific interface: Device.Wired, .Wireless, .Modem, .Bluetooth, else .Generic.
    var typedInterface: String {
        let prefix = "org.freedesktop.NetworkManager.Device."
        switch deviceType {
        case 1: return prefix + "Wired"
        case 2: return prefix + "Wireless"
        case 8: return prefix + "Modem"
        case 5: return prefix + "Bluetooth"
        default: return prefix + "Generic"
        }
    }

    /// Its properties: nothing reachd knows beyond the name and type (no addresses, speeds or access points).
    func typedProperties(of link: LinkInfo) -> NetworkManagerFaceState.Properties {
        switch deviceType {
        case 1: ["HwAddress": .string(""), "PermHwAddress": .string(""), "Speed": .uint32(0), "S390Subchannels": .strings([])]
        case 2: ["HwAddress": .string(""), "PermHwAddress": .string(""), "Mode": .uint32(2), "Bitrate": .uint32(0),
                 "AccessPoints": .objectPaths([]), "ActiveAccessPoint": .objectPath("/"), "WirelessCapabilities": .uint32(0),
                 "LastScan": .int64(-1)]
        case 8: ["ModemCapabilities": .uint32(0), "CurrentCapabilities": .uint32(0), "DeviceId": .string(""),
                 "OperatorCode": .string(""), "Apn": .string("")]
        case 5: ["HwAddress": .string(""), "Name": .string(link.name), "BtCapabilities": .uint32(0)]
        default: ["HwAddress": .string(""), "TypeDescription": .string(connectionType)]
        }
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
