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

    /// The reply as one line: compact JSON (keys sorted) and `\n`.
    public func encodedLine() -> [UInt8] { ReplyWriter.line(self) }

    /// Decodes one line from the daemon.
    public static func decode(line: [UInt8]) throws -> Reply {
        try JSONDecoder().decode(Reply.self, from: Data(line))
    }
}
