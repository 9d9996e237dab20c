/// A network interface the path can use, as in Apple's Network framework.
public struct NWInterface: Hashable, CustomDebugStringConvertible, Sendable {
    /// The kind of link an interface connects to.
    public enum InterfaceType: Hashable, Sendable {
        /// A virtual or otherwise unknown link (tunnels, bridges, VPNs).
        case other
        /// Wi-Fi (`DEVTYPE=wlan`, cfg80211, `wl*`).
        case wifi
        /// A mobile broadband modem (`DEVTYPE=wwan`, `ww*`).
        case cellular
        /// Ethernet (`en*`, `eth*`, Ethernet hardware).
        case wiredEthernet
        /// The loopback interface.
        case loopback
    }

    /// The interface type, from reachd's classifier and its `[[interface]] kind` rules.
    public let type: InterfaceType
    /// The kernel's name of the interface, e.g. `eth0`.
    public let name: String
    /// The kernel's interface index.
    public let index: Int

    package init(type: InterfaceType, name: String, index: Int) {
        self.type = type
        self.name = name
        self.index = index
    }

    public var debugDescription: String { name }
}
