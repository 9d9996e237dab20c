#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ReachdModel

// Reading reachd's replies (docs/protocol.md): the other half of `ReplyWriter`, which writes the same shape by
// hand. The two are held together by `ReplyRoundTripTests` (every field, many generated verdicts) and by
// `ReplyWriterTests` (the bytes).

extension Reply: Decodable {
    private enum CodingKeys: String, ReplyEnvelopeKey {
        case version, type, id, verdict, verdicts, error
    }

    public init(from decoder: any Decoder) throws {
        let envelope = try ReplyEnvelope<CodingKeys>(decoder)
        let c = envelope.container, id = envelope.id
        switch envelope.type {
        case "status": self = .status(id: id, verdict: try c.decode(StampedVerdict.self, forKey: .verdict))
        case "subscribed": self = .subscribed(id: id, verdicts: try c.decode([StampedVerdict].self, forKey: .verdicts))
        case "event": self = .event(verdict: try c.decode(StampedVerdict.self, forKey: .verdict))
        case "pong": self = .pong(id: id)
        case "error": self = .error(try envelope.error())
        default: throw envelope.unknownType
        }
    }

    /// Decodes one line from the daemon.
    public static func decode(line: [UInt8]) throws -> Reply {
        try JSONDecoder().decode(Reply.self, from: Data(line))
    }
}

extension IPAddress: Decodable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let address = IPAddress(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an IP address: \(text)"))
        }
        self = address
    }
}

extension ReachabilityFlags: Decodable {
    public init(from decoder: any Decoder) throws {
        let names = try decoder.singleValueContainer().decode([String].self)
        guard let flags = ReachabilityFlags(names: names) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "unknown flag in \(names)"))
        }
        self = flags
    }
}

extension ClassicStatus: Decodable {}

extension FamilyVerdict: Decodable {
    private enum CodingKeys: String, CodingKey {
        case reachable, status, flags, metered, meteredReason, meteredState, meteredSource, interface, kind, kindSource, gateway, metric, reason,
            reasonCode
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            reachable: try c.decode(Bool.self, forKey: .reachable),
            status: try c.decode(ReachabilityStatus.self, forKey: .status),
            flags: try c.decode(ReachabilityFlags.self, forKey: .flags),
            metered: try c.decode(Bool.self, forKey: .metered),
            meteredState: try c.decodeIfPresent(String.self, forKey: .meteredState).flatMap(MeteredState.init(rawValue:)),
            meteredSource: try c.decodeIfPresent(String.self, forKey: .meteredSource).flatMap(MeteredSource.init(rawValue:)),
            meteredReason: try c.decodeIfPresent(String.self, forKey: .meteredReason),
            interface: try c.decodeIfPresent(String.self, forKey: .interface),
            kind: try c.decodeIfPresent(InterfaceKind.self, forKey: .kind),
            kindSource: try c.decodeIfPresent(String.self, forKey: .kindSource),
            gateway: try c.decodeIfPresent(IPAddress.self, forKey: .gateway),
            metric: try c.decodeIfPresent(UInt32.self, forKey: .metric),
            reason: try c.decodeIfPresent(String.self, forKey: .reason),
            reasonCode: try c.decodeIfPresent(String.self, forKey: .reasonCode).flatMap(ReasonCode.init(rawValue:))
        )
    }
}

extension Verdict: Decodable {
    private enum CodingKeys: String, CodingKey {
        case target, reachable, status, metered, meteredReason, meteredState, meteredSource, interface, flags, reason, reasonCode, family,
            classicStatus, ipv4, ipv6, addresses, connectivity, captivePortal, budget, roamingSource, wifiNetwork
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
            addresses: try c.decodeIfPresent([IPAddress].self, forKey: .addresses),
            reasonCode: try c.decodeIfPresent(String.self, forKey: .reasonCode).flatMap(ReasonCode.init(rawValue:)),
            meteredState: try c.decodeIfPresent(String.self, forKey: .meteredState).flatMap(MeteredState.init(rawValue:)),
            meteredSource: try c.decodeIfPresent(String.self, forKey: .meteredSource).flatMap(MeteredSource.init(rawValue:))
        )
        connectivity = try c.decodeIfPresent(Connectivity.self, forKey: .connectivity) ?? .unknown
        captivePortal = try c.decodeIfPresent(CaptivePortal.self, forKey: .captivePortal)
        budget = try c.decodeIfPresent(BudgetStatus.self, forKey: .budget)
        // `roaming` is true exactly when `roamingSource` is there; `cost` is derived from the fields (`Verdict.cost`).
        roamingSource = try c.decodeIfPresent(String.self, forKey: .roamingSource).flatMap(RoamingSource.init(rawValue:))
        wifiNetwork = try c.decodeIfPresent(WifiNetworkLine.self, forKey: .wifiNetwork)?.identity
    }
}

/// A verdict's `wifiNetwork`: the SSID from `ssidHex` (exact), the BSSID from its text; one that does not make a
/// `WifiIdentity` (an SSID of no or over 32 bytes) reads as none.
private struct WifiNetworkLine: Decodable {
    var ssidHex: String
    var bssid: String?

    var identity: WifiIdentity? {
        guard ssidHex.utf8.count <= 2 * WifiIdentity.maximumSSIDLength, let ssid = WifiIdentity.bytes(hex: ssidHex) else { return nil }
        return WifiIdentity(ssid: ssid, bssid: bssid.flatMap(WifiIdentity.bssid))
    }
}

extension ConnectionCost: Decodable {
    private enum CodingKeys: String, CodingKey {
        case level, roaming, approachingDataLimit, overDataLimit
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            level: try c.decode(CostLevel.self, forKey: .level),
            roaming: try c.decode(Bool.self, forKey: .roaming),
            approachingDataLimit: try c.decode(Bool.self, forKey: .approachingDataLimit),
            overDataLimit: try c.decode(Bool.self, forKey: .overDataLimit)
        )
    }
}

extension BudgetStatus: Decodable {
    private enum CodingKeys: String, CodingKey {
        case state, usedBytes, limitBytes, period, resetsAt
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            state: try c.decode(BudgetState.self, forKey: .state),
            usedBytes: try c.decode(UInt64.self, forKey: .usedBytes),
            limitBytes: try c.decode(UInt64.self, forKey: .limitBytes),
            period: try c.decode(String.self, forKey: .period),
            resetsAt: try c.decode(Timestamp.self, forKey: .resetsAt)
        )
    }
}

extension CaptivePortal: Decodable {
    private enum CodingKeys: String, CodingKey {
        case apiURL, captive, userPortalURL, venueInfoURL, canExtendSession, secondsRemaining, bytesRemaining
    }

    /// The API URL, and the answer's fields when `captive` is there (null before the API answered).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(apiURL: try c.decode(String.self, forKey: .apiURL))
        if let captive = try c.decodeIfPresent(Bool.self, forKey: .captive) {
            status = CaptivePortalStatus(
                captive: captive,
                userPortalURL: try c.decodeIfPresent(String.self, forKey: .userPortalURL),
                venueInfoURL: try c.decodeIfPresent(String.self, forKey: .venueInfoURL),
                canExtendSession: try c.decodeIfPresent(Bool.self, forKey: .canExtendSession),
                secondsRemaining: try c.decodeIfPresent(UInt64.self, forKey: .secondsRemaining),
                bytesRemaining: try c.decodeIfPresent(UInt64.self, forKey: .bytesRemaining)
            )
        }
    }
}

extension StampedVerdict: Decodable {
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
}
