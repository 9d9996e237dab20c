import ReachdModel

/// Writes replies as JSON by hand: events are the daemon's hot path (a route change can publish a thousand
/// host verdicts), and this is about ten times faster than `JSONEncoder`. Keys are in sorted order; the
/// other half of reachd's wire format, `ReplyReader.swift`, reads the same shape, and tests hold the two
/// together (`ReplyRoundTripTests`, `ReplyWriterTests`).
enum ReplyWriter {
    static func line(_ reply: Reply) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        out.append(UInt8(ascii: "{"))
        switch reply {
        case .status(let id, let verdict):
            id.map { key("id", &out); write($0, &out); comma(&out) }
            key("type", &out); string(reply.type, &out); comma(&out)
            key("verdict", &out); write(verdict, &out); comma(&out)
        case .subscribed(let id, let verdicts):
            id.map { key("id", &out); write($0, &out); comma(&out) }
            key("type", &out); string(reply.type, &out); comma(&out)
            if let first = verdicts.first { key("verdict", &out); write(first, &out); comma(&out) }
            key("verdicts", &out); array(verdicts, &out) { write($0, &$1) }; comma(&out)
        case .event(let verdict):
            key("type", &out); string(reply.type, &out); comma(&out)
            key("verdict", &out); write(verdict, &out); comma(&out)
        case .pong(let id):
            id.map { key("id", &out); write($0, &out); comma(&out) }
            key("type", &out); string(reply.type, &out); comma(&out)
        case .error(let error):
            key("error", &out)
            out.append(UInt8(ascii: "{"))
            key("code", &out); string(error.code.rawValue, &out); comma(&out)
            key("message", &out); string(error.message, &out)
            out.append(UInt8(ascii: "}")); comma(&out)
            error.id.map { key("id", &out); write($0, &out); comma(&out) }
            key("type", &out); string(reply.type, &out); comma(&out)
        }
        key("version", &out); out.append(contentsOf: String(protocolVersion).utf8)
        out.append(UInt8(ascii: "}"))
        out.append(UInt8(ascii: "\n"))
        return out
    }

    /// A stamped verdict: the verdict's fields with `sequence` and `timestamp`, keys sorted.
    static func write(_ stamped: StampedVerdict, _ out: inout [UInt8]) {
        let v = stamped.verdict
        out.append(UInt8(ascii: "{"))
        if let addresses = v.addresses {
            key("addresses", &out); array(addresses, &out) { string($0.description, &$1) }; comma(&out)
        }
        if let budget = v.budget { key("budget", &out); write(budget, &out); comma(&out) }
        key("captivePortal", &out); optional(v.captivePortal, &out, write); comma(&out)
        key("classicStatus", &out); string(v.classicStatus.rawValue, &out); comma(&out)
        if v.addresses == nil { key("connectivity", &out); string(v.connectivity.rawValue, &out); comma(&out) }
        key("cost", &out); optional(v.cost, &out, write); comma(&out)
        key("family", &out); optional(v.family?.rawValue, &out); comma(&out)
        key("flags", &out); flags(v.flags, &out); comma(&out)
        key("interface", &out); optional(v.interface, &out); comma(&out)
        key("ipv4", &out); write(v.ipv4, &out); comma(&out)
        key("ipv6", &out); write(v.ipv6, &out); comma(&out)
        key("metered", &out); bool(v.metered, &out); comma(&out)
        key("meteredReason", &out); optional(v.meteredReason, &out); comma(&out)
        key("meteredSource", &out); optional(v.meteredSource?.rawValue, &out); comma(&out)
        key("meteredState", &out); string(v.meteredState.rawValue, &out); comma(&out)
        key("reachable", &out); bool(v.reachable, &out); comma(&out)
        key("reason", &out); optional(v.reason, &out); comma(&out)
        key("reasonCode", &out); optional(v.reasonCode?.rawValue, &out); comma(&out)
        key("roaming", &out); bool(v.roaming, &out); comma(&out)
        key("roamingSource", &out); optional(v.roamingSource?.rawValue, &out); comma(&out)
        key("sequence", &out); out.append(contentsOf: String(stamped.sequence).utf8); comma(&out)
        key("status", &out); string(v.status.rawValue, &out); comma(&out)
        key("target", &out); string(v.target, &out); comma(&out)
        key("timestamp", &out)
        out.append(UInt8(ascii: "\""))
        stamped.timestamp.append(to: &out)
        out.append(UInt8(ascii: "\""))
        if let network = v.wifiNetwork { comma(&out); key("wifiNetwork", &out); write(network, &out) }
        out.append(UInt8(ascii: "}"))
    }

    /// A Wi-Fi network: its BSSID when known, its name as text (`WifiIdentity.name`) and its SSID's exact bytes in hex.
    static func write(_ network: WifiIdentity, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let bssid = network.bssidText { key("bssid", &out); string(bssid, &out); comma(&out) }
        key("name", &out); string(network.name, &out); comma(&out)
        key("ssidHex", &out); string(network.ssidHex, &out)
        out.append(UInt8(ascii: "}"))
    }

    static func write(_ f: FamilyVerdict, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        key("flags", &out); flags(f.flags, &out); comma(&out)
        key("gateway", &out); optional(f.gateway?.description, &out); comma(&out)
        key("interface", &out); optional(f.interface, &out); comma(&out)
        key("kind", &out); optional(f.kind?.rawValue, &out); comma(&out)
        key("kindSource", &out); optional(f.kindSource, &out); comma(&out)
        key("metered", &out); bool(f.metered, &out); comma(&out)
        key("meteredReason", &out); optional(f.meteredReason, &out); comma(&out)
        key("meteredSource", &out); optional(f.meteredSource?.rawValue, &out); comma(&out)
        key("meteredState", &out); string(f.meteredState.rawValue, &out); comma(&out)
        key("metric", &out)
        if let metric = f.metric { out.append(contentsOf: String(metric).utf8) } else { null(&out) }
        comma(&out)
        key("reachable", &out); bool(f.reachable, &out); comma(&out)
        key("reason", &out); optional(f.reason, &out); comma(&out)
        key("reasonCode", &out); optional(f.reasonCode?.rawValue, &out); comma(&out)
        key("status", &out); string(f.status.rawValue, &out)
        out.append(UInt8(ascii: "}"))
    }

    /// A captive portal: the announced API and the fields of its last answer (null before it answered).
    static func write(_ portal: CaptivePortal, _ out: inout [UInt8]) {
        let status = portal.status
        out.append(UInt8(ascii: "{"))
        key("apiURL", &out); string(portal.apiURL, &out); comma(&out)
        key("bytesRemaining", &out); optional(status?.bytesRemaining, &out) { number($0, &$1) }; comma(&out)
        key("canExtendSession", &out); optional(status?.canExtendSession, &out) { bool($0, &$1) }; comma(&out)
        key("captive", &out); optional(status?.captive, &out) { bool($0, &$1) }; comma(&out)
        key("secondsRemaining", &out); optional(status?.secondsRemaining, &out) { number($0, &$1) }; comma(&out)
        key("userPortalURL", &out); optional(status?.userPortalURL, &out); comma(&out)
        key("venueInfoURL", &out); optional(status?.venueInfoURL, &out)
        out.append(UInt8(ascii: "}"))
    }

    /// A data budget's standing: state, bytes used and the limit, the period and when it starts again.
    static func write(_ budget: BudgetStatus, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        key("limitBytes", &out); number(budget.limitBytes, &out); comma(&out)
        key("period", &out); string(budget.period, &out); comma(&out)
        key("resetsAt", &out)
        out.append(UInt8(ascii: "\""))
        budget.resetsAt.append(to: &out)
        out.append(UInt8(ascii: "\""))
        comma(&out)
        key("state", &out); string(budget.state.rawValue, &out); comma(&out)
        key("usedBytes", &out); number(budget.usedBytes, &out)
        out.append(UInt8(ascii: "}"))
    }

    /// A path's cost: the level and NLM's three flags (`ConnectionCost`).
    static func write(_ cost: ConnectionCost, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        key("approachingDataLimit", &out); bool(cost.approachingDataLimit, &out); comma(&out)
        key("level", &out); string(cost.level.rawValue, &out); comma(&out)
        key("overDataLimit", &out); bool(cost.overDataLimit, &out); comma(&out)
        key("roaming", &out); bool(cost.roaming, &out)
        out.append(UInt8(ascii: "}"))
    }

    static func write(_ id: RequestID, _ out: inout [UInt8]) {
        switch id {
        case .number(let n): out.append(contentsOf: String(n).utf8)
        case .string(let s): string(s, &out)
        }
    }

    // MARK: - Primitives

    /// Appends single bytes, never an array literal: a literal here was a heap allocation per key, some 50 a
    /// verdict (a thousand host events are encoded after one route change).
    private static func key(_ name: StaticString, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    private static func comma(_ out: inout [UInt8]) { out.append(UInt8(ascii: ",")) }
    private static func null(_ out: inout [UInt8]) { out.append(contentsOf: "null".utf8) }
    private static func bool(_ value: Bool, _ out: inout [UInt8]) { out.append(contentsOf: (value ? "true" : "false").utf8) }

    /// `flags.names` as a JSON array, without building that array.
    private static func flags(_ flags: ReachabilityFlags, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        var first = true
        for (name, flag) in ReachabilityFlags.named where flags.contains(flag) {
            if !first { comma(&out) }
            first = false
            string(name, &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    private static func optional(_ value: String?, _ out: inout [UInt8]) {
        if let value { string(value, &out) } else { null(&out) }
    }

    private static func optional<T>(_ value: T?, _ out: inout [UInt8], _ write: (T, inout [UInt8]) -> Void) {
        if let value { write(value, &out) } else { null(&out) }
    }

    private static func number(_ value: UInt64, _ out: inout [UInt8]) { out.append(contentsOf: String(value).utf8) }

    private static func array<T>(_ items: [T], _ out: inout [UInt8], _ element: (T, inout [UInt8]) -> Void) {
        out.append(UInt8(ascii: "["))
        for (index, item) in items.enumerated() {
            if index > 0 { comma(&out) }
            element(item, &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\n`, `\t`, ... or `\u00XX`; UTF-8 as is.
    /// A string with nothing to escape (nearly all) is copied in one go.
    static func string(_ value: String, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        if value.utf8.contains(where: needsEscape) {
            for byte in value.utf8 { escaped(byte, &out) }
        } else {
            out.append(contentsOf: value.utf8)
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    private static func escaped(_ byte: UInt8, _ out: inout [UInt8]) {
        guard needsEscape(byte) else { return out.append(byte) }
        out.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
        case 0x0A: out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789abcdef"
            out.append(UInt8(ascii: "u"))
            out.append(UInt8(ascii: "0"))
            out.append(UInt8(ascii: "0"))
            hex.withUTF8Buffer { digits in
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0xF)])
            }
        }
    }
}

extension Reply {
    /// The reply as one line: compact JSON (keys sorted) and `\n`.
    public func encodedLine() -> [UInt8] { ReplyWriter.line(self) }
}

extension StampedVerdict {
    /// The verdict as one JSON object (no newline), as it appears inside replies.
    public var json: String {
        var out: [UInt8] = []
        ReplyWriter.write(self, &out)
        return String(decoding: out, as: UTF8.self)
    }
}
