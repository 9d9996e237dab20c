/// One interface of wpa_supplicant's as read from its bus (a hostile peer: checked in `WifiStations`).
public struct WpaSupplicantReading: Hashable, Sendable {
    /// `Interface.Ifname`.
    public var interface: String
    /// `Interface.State` (`completed` once joined; see `WifiStations.wpaSupplicantJoined`).
    public var state: String
    /// The current BSS's `SSID`, `BSSID` and `IEs`; nil without a current BSS.
    public var ssid: [UInt8]?
    public var bssid: [UInt8]?
    public var elements: [UInt8]?

    public init(interface: String, state: String, ssid: [UInt8]? = nil, bssid: [UInt8]? = nil, elements: [UInt8]? = nil) {
        self.interface = interface
        self.state = state
        self.ssid = ssid
        self.bssid = bssid
        self.elements = elements
    }
}

/// One station of iwd's as read from its bus.
public struct IwdStationReading: Hashable, Sendable {
    /// The station's Device `Name`.
    public var interface: String
    /// `Station.State` (`connected` or `roaming` once joined).
    public var state: String
    /// The connected Network's `Name`; nil without one.
    public var networkName: String?
    /// The connected access point's `Address` (`BasicServiceSet`, iwd ≥ 2.x); nil without one.
    public var bssid: String?

    public init(interface: String, state: String, networkName: String? = nil, bssid: String? = nil) {
        self.interface = interface
        self.state = state
        self.networkName = networkName
        self.bssid = bssid
    }
}

/// Which network each Wi-Fi link has joined, from what iwd or wpa_supplicant says (pure). Bounded: at most
/// `maximumInterfaces` interfaces are looked at (the shells read no more); an interface name the kernel would
/// refuse, an SSID that is empty or over 32 bytes, or a station that has not finished joining gives nothing; a
/// BSSID that is not six bytes is left out; a beacon's elements over 4096 bytes give no hint.
public enum WifiStations {
    /// Interfaces read from one daemon; more are ignored (a host has one or two).
    public static let maximumInterfaces = 16

    /// wpa_supplicant's states of an interface with a current BSS: `completed`, and those it passes through while it
    /// joins, roams to another access point or renews its keys.
    public static let wpaSupplicantJoined: Set<String> = ["authenticating", "associating", "associated", "4way_handshake",
                                                          "group_handshake", "completed"]

    /// The networks of wpa_supplicant's interfaces, by interface name: those `completed`, and those in another of
    /// `wpaSupplicantJoined` on the network `previous` (the last networks published) had them on (a roam or a key
    /// renewal keeps the network; a first join, or a password tried again and again, shows none until completed).
    public static func networks(wpaSupplicant readings: [WpaSupplicantReading], previous: [String: WifiNetwork] = [:]) -> [String: WifiNetwork] {
        var networks: [String: WifiNetwork] = [:]
        for reading in readings.prefix(maximumInterfaces) where wpaSupplicantJoined.contains(reading.state) && LinkInfo.isValidName(reading.interface) {
            guard let ssid = reading.ssid, reading.state == "completed" || previous[reading.interface]?.identity.ssid == ssid,
                  let identity = WifiIdentity(ssid: ssid, bssid: reading.bssid?.count == 6 ? reading.bssid : nil) else { continue }
            let hints = reading.elements.flatMap { try? WifiElements.parse($0).get().hints } ?? WifiHints()
            networks[reading.interface] = WifiNetwork(identity: identity, hints: hints, daemon: .wpaSupplicant)
        }
        return networks
    }

    /// The networks of iwd's stations that are `connected` (or `roaming` between two access points of one network),
    /// by interface name.
    public static func networks(iwd readings: [IwdStationReading]) -> [String: WifiNetwork] {
        var networks: [String: WifiNetwork] = [:]
        for reading in readings.prefix(maximumInterfaces)
        where ["connected", "roaming"].contains(reading.state) && LinkInfo.isValidName(reading.interface) {
            guard let name = reading.networkName,
                  let identity = WifiIdentity(ssid: Array(name.utf8), bssid: reading.bssid.flatMap(WifiIdentity.bssid)) else { continue }
            networks[reading.interface] = WifiNetwork(identity: identity, daemon: .iwd)
        }
        return networks
    }
}
