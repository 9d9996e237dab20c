// The JSON shape of verdicts (docs/protocol.md). Codable is the standard library's; the encoder is the caller's.

extension IPAddress: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let address = IPAddress(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an IP address: \(text)"))
        }
        self = address
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension Timestamp: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let time = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an RFC 3339 time: \(text)"))
        }
        self = time
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension ReachabilityFlags: Codable {
    public init(from decoder: any Decoder) throws {
        let names = try decoder.singleValueContainer().decode([String].self)
        guard let flags = ReachabilityFlags(names: names) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "unknown flag in \(names)"))
        }
        self = flags
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(names)
    }
}

extension ClassicStatus: Codable {}

extension FamilyVerdict: Codable {
    private enum CodingKeys: String, CodingKey {
        case reachable, status, flags, metered, meteredReason, interface, kind, kindSource, gateway, metric, reason
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            reachable: try c.decode(Bool.self, forKey: .reachable),
            status: try c.decode(ReachabilityStatus.self, forKey: .status),
            flags: try c.decode(ReachabilityFlags.self, forKey: .flags),
            metered: try c.decode(Bool.self, forKey: .metered),
            meteredReason: try c.decodeIfPresent(String.self, forKey: .meteredReason),
            interface: try c.decodeIfPresent(String.self, forKey: .interface),
            kind: try c.decodeIfPresent(InterfaceKind.self, forKey: .kind),
            kindSource: try c.decodeIfPresent(String.self, forKey: .kindSource),
            gateway: try c.decodeIfPresent(IPAddress.self, forKey: .gateway),
            metric: try c.decodeIfPresent(UInt32.self, forKey: .metric),
            reason: try c.decodeIfPresent(String.self, forKey: .reason)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(reachable, forKey: .reachable)
        try c.encode(status, forKey: .status)
        try c.encode(flags, forKey: .flags)
        try c.encode(metered, forKey: .metered)
        try c.encode(meteredReason, forKey: .meteredReason)
        try c.encode(interface, forKey: .interface)
        try c.encode(kind, forKey: .kind)
        try c.encode(kindSource, forKey: .kindSource)
        try c.encode(gateway, forKey: .gateway)
        try c.encode(metric, forKey: .metric)
        try c.encode(reason, forKey: .reason)
    }
}

extension Verdict: Codable {
    private enum CodingKeys: String, CodingKey {
        case target, reachable, status, metered, meteredReason, interface, flags, reason, family, classicStatus, ipv4, ipv6, addresses
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            target: try c.decode(String.self, forKey: .target),
            reachable: try c.decode(Bool.self, forKey: .reachable),
            status: try c.decode(ReachabilityStatus.self, forKey: .status),
            metered: try c.decode(Bool.self, forKey: .metered),
            meteredReason: try c.decodeIfPresent(String.self, forKey: .meteredReason),
            interface: try c.decodeIfPresent(String.self, forKey: .interface),
            flags: try c.decode(ReachabilityFlags.self, forKey: .flags),
            reason: try c.decodeIfPresent(String.self, forKey: .reason),
            family: try c.decodeIfPresent(IPAddress.Family.self, forKey: .family),
            ipv4: try c.decode(FamilyVerdict.self, forKey: .ipv4),
            ipv6: try c.decode(FamilyVerdict.self, forKey: .ipv6),
            addresses: try c.decodeIfPresent([IPAddress].self, forKey: .addresses)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(target, forKey: .target)
        try c.encode(reachable, forKey: .reachable)
        try c.encode(status, forKey: .status)
        try c.encode(metered, forKey: .metered)
        try c.encode(meteredReason, forKey: .meteredReason)
        try c.encode(interface, forKey: .interface)
        try c.encode(flags, forKey: .flags)
        try c.encode(reason, forKey: .reason)
        try c.encode(family, forKey: .family)
        try c.encode(classicStatus, forKey: .classicStatus)
        try c.encode(ipv4, forKey: .ipv4)
        try c.encode(ipv6, forKey: .ipv6)
        try c.encodeIfPresent(addresses, forKey: .addresses)
    }
}

extension StampedVerdict: Codable {
    private enum CodingKeys: String, CodingKey {
        case sequence, timestamp
    }

    /// Decodes the verdict's fields and `sequence`/`timestamp` from one flat object.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            verdict: try Verdict(from: decoder),
            sequence: try c.decode(UInt64.self, forKey: .sequence),
            timestamp: try c.decode(Timestamp.self, forKey: .timestamp)
        )
    }

    /// Encodes one flat object: the verdict's fields, then `sequence` and `timestamp`.
    public func encode(to encoder: any Encoder) throws {
        try verdict.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sequence, forKey: .sequence)
        try c.encode(timestamp, forKey: .timestamp)
    }
}
