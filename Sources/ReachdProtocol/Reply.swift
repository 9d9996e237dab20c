#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ReachdModel

/// A message from the daemon: one JSON object per line, always with `version` and `type`.
public enum Reply: Sendable, Hashable {
    /// Answer to `status`.
    case status(id: RequestID?, verdict: StampedVerdict)
    /// Answer to `subscribe`: the current verdict of every target asked for; `event` lines follow.
    case subscribed(id: RequestID?, verdicts: [StampedVerdict])
    /// A change of the verdict, to subscribers.
    case event(verdict: StampedVerdict)
    /// Answer to `ping`.
    case pong(id: RequestID?)
    /// A refused request; the connection stays open.
    case error(ProtocolError)

    /// The wire name in `type`.
    public var type: String {
        switch self {
        case .status: "status"
        case .subscribed: "subscribed"
        case .event: "event"
        case .pong: "pong"
        case .error: "error"
        }
    }
}

extension Reply: Codable {
    private enum CodingKeys: String, CodingKey {
        case version, type, id, verdict, verdicts, error
    }

    private struct ErrorBody: Codable {
        var code: ProtocolError.Code
        var message: String
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(protocolVersion, forKey: .version)
        try c.encode(type, forKey: .type)
        switch self {
        case .status(let id, let verdict):
            try c.encodeIfPresent(id, forKey: .id)
            try c.encode(verdict, forKey: .verdict)
        case .subscribed(let id, let verdicts):
            try c.encodeIfPresent(id, forKey: .id)
            try c.encodeIfPresent(verdicts.first, forKey: .verdict)
            try c.encode(verdicts, forKey: .verdicts)
        case .event(let verdict):
            try c.encode(verdict, forKey: .verdict)
        case .pong(let id):
            try c.encodeIfPresent(id, forKey: .id)
        case .error(let error):
            try c.encodeIfPresent(error.id, forKey: .id)
            try c.encode(ErrorBody(code: error.code, message: error.message), forKey: .error)
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let version = try c.decode(Int.self, forKey: .version)
        guard version == protocolVersion else {
            throw DecodingError.dataCorruptedError(forKey: .version, in: c, debugDescription: "unsupported protocol version \(version)")
        }
        let id = try c.decodeIfPresent(RequestID.self, forKey: .id)
        switch try c.decode(String.self, forKey: .type) {
        case "status": self = .status(id: id, verdict: try c.decode(StampedVerdict.self, forKey: .verdict))
        case "subscribed": self = .subscribed(id: id, verdicts: try c.decode([StampedVerdict].self, forKey: .verdicts))
        case "event": self = .event(verdict: try c.decode(StampedVerdict.self, forKey: .verdict))
        case "pong": self = .pong(id: id)
        case "error":
            let body = try c.decode(ErrorBody.self, forKey: .error)
            self = .error(ProtocolError(body.code, body.message, id: id))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "unknown message type \(other)")
        }
    }

    /// The reply as one line: compact JSON and `\n`.
    public func encodedLine() -> [UInt8] { encodeJSONLine(self) }

    /// Decodes one line from the daemon.
    public static func decode(line: [UInt8]) throws -> Reply {
        try JSONDecoder().decode(Reply.self, from: Data(line))
    }
}
