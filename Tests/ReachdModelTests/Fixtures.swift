import ReachdModel

/// Small builders for snapshots in table tests.
enum Fixture {
    static let operational: LinkFlags = [.up, .running, .lowerUp]
    static let noCarrier: LinkFlags = [.up]

    static func link(_ index: Int32, _ name: String, _ flags: LinkFlags = operational, kind: String? = nil,
                     hardware: UInt32 = LinkInfo.arpEther, sysfs: SysfsFacts = .none) -> LinkInfo {
        LinkInfo(index: index, name: name, flags: flags, carrier: flags.contains(.lowerUp), linkKind: kind, hardwareType: hardware, sysfs: sysfs)
    }

    static func v4(_ index: Int32, _ text: String, scope: UInt8 = InterfaceAddress.scopeUniverse) -> InterfaceAddress {
        InterfaceAddress(interfaceIndex: index, address: IPAddress(text)!, prefixLength: 24, scope: scope)
    }

    static func v6(_ index: Int32, _ text: String, scope: UInt8 = InterfaceAddress.scopeUniverse, flags: AddressFlags = []) -> InterfaceAddress {
        InterfaceAddress(interfaceIndex: index, address: IPAddress(text)!, prefixLength: 64, scope: scope, flags: flags)
    }

    static func defaultRoute(_ family: IPAddress.Family = .ipv4, via gateway: String?, dev index: Int32, metric: UInt32 = 0,
                             type: RouteType = .unicast) -> Route {
        Route(family: family, type: type, metric: metric,
              nexthops: type == .unicast ? [Nexthop(interfaceIndex: index, gateway: gateway.flatMap(IPAddress.init))] : [])
    }
}
