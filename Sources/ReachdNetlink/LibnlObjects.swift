import CNetlink
import ReachdModel

/// Conversions from libnl's cached objects to model values. Pointers never leave this file's callers.
enum LibnlObjects {
    /// `RTM_F_CLONED`: a route cache entry, not a configured route.
    private static let routeFlagCloned: UInt32 = 0x200
    /// `RT_TABLE_LOCAL`: local and broadcast routes of the host's own addresses.
    private static let localTable: UInt32 = 255

    /// Every object of a cache, in cache order.
    static func objects(of cache: OpaquePointer) -> [OpaquePointer] {
        var result: [OpaquePointer] = []
        var object = nl_cache_get_first(cache)
        while let current = object {
            result.append(current)
            object = nl_cache_get_next(current)
        }
        return result
    }

    static func address(_ addr: OpaquePointer?) -> IPAddress? {
        guard let addr, let raw = nl_addr_get_binary_addr(addr) else { return nil }
        let length = Int(nl_addr_get_len(addr))
        guard length == 4 || length == 16 else { return nil }
        let bytes = [UInt8](UnsafeRawBufferPointer(start: raw, count: length))
        return IPAddress(bytes: bytes)
    }

    static func link(_ object: OpaquePointer) -> LinkInfo? {
        // The link cache also keeps AF_INET6 objects (RTNLGRP_IPV6_IFINFO) for the same ifindex, without
        // IFLA_CARRIER: they are not the link, and taken for it they read as "no carrier".
        guard rtnl_link_get_family(object) == AF_UNSPEC else { return nil }
        let index = Int32(rtnl_link_get_ifindex(object))
        guard index > 0, let name = rtnl_link_get_name(object) else { return nil }
        let flags = rtnl_link_get_flags(object)
        return LinkInfo(
            index: index,
            name: String(cString: name),
            flags: LinkFlags(rawValue: UInt32(flags)),
            carrier: rtnl_link_get_carrier(object) != 0,
            linkKind: rtnl_link_get_type(object).map { String(cString: $0) },
            hardwareType: UInt32(rtnl_link_get_arptype(object))
        )
    }

    static func interfaceAddress(_ object: OpaquePointer) -> InterfaceAddress? {
        guard let address = address(rtnl_addr_get_local(object)) else { return nil }
        return InterfaceAddress(
            interfaceIndex: Int32(rtnl_addr_get_ifindex(object)),
            address: address,
            prefixLength: UInt8(clamping: rtnl_addr_get_prefixlen(object)),
            scope: UInt8(clamping: rtnl_addr_get_scope(object)),
            flags: AddressFlags(rawValue: UInt32(rtnl_addr_get_flags(object)))
        )
    }

    static func route(_ object: OpaquePointer) -> Route? {
        let family: IPAddress.Family
        switch Int32(rtnl_route_get_family(object)) {
        case AF_INET: family = .ipv4
        case AF_INET6: family = .ipv6
        default: return nil
        }
        let table = rtnl_route_get_table(object)
        let routeFlags = rtnl_route_get_flags(object)
        guard table != localTable, routeFlags & routeFlagCloned == 0 else { return nil }
        let dst = rtnl_route_get_dst(object)
        let prefixLength = dst.map { UInt8(clamping: nl_addr_get_prefixlen($0)) } ?? 0
        var hops: [Nexthop] = []
        let count = rtnl_route_get_nnexthops(object)
        for n in 0..<max(0, count) {
            guard let hop = rtnl_route_nexthop_n(object, n) else { continue }
            hops.append(Nexthop(
                interfaceIndex: Int32(rtnl_route_nh_get_ifindex(hop)),
                gateway: address(rtnl_route_nh_get_gateway(hop))
            ))
        }
        return Route(
            family: family,
            table: table,
            type: RouteType(rawValue: rtnl_route_get_type(object)) ?? .unspecified,
            destination: prefixLength == 0 ? nil : address(dst),
            prefixLength: prefixLength,
            metric: rtnl_route_get_priority(object),
            nexthops: hops
        )
    }

    /// Whether one of the route's next hops goes through link `index`.
    static func route(_ object: OpaquePointer, usesInterface index: Int32) -> Bool {
        (0..<max(0, rtnl_route_get_nnexthops(object))).contains { n in
            rtnl_route_nexthop_n(object, n).map { rtnl_route_nh_get_ifindex($0) == index } ?? false
        }
    }

    /// One netconf entry's `ignore_routes_with_linkdown`, if the object carries it.
    static func linkdownSetting(_ object: OpaquePointer) -> (IPAddress.Family, Int32, Bool)? {
        var family: Int32 = 0
        var index: Int32 = 0
        var value: Int32 = 0
        guard rtnl_netconf_get_family(object, &family) == 0,
              rtnl_netconf_get_ifindex(object, &index) == 0,
              rtnl_netconf_get_ignore_routes_linkdown(object, &value) == 0 else { return nil }
        switch family {
        case AF_INET: return (.ipv4, index, value != 0)
        case AF_INET6: return (.ipv6, index, value != 0)
        default: return nil
        }
    }
}
