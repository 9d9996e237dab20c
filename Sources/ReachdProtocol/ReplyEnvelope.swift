/// The coding keys every reply type has.
protocol ReplyEnvelopeKey: CodingKey {
    static var version: Self { get }
    static var type: Self { get }
    static var id: Self { get }
    static var error: Self { get }
}

/// What every reply line shares when it is read: `version` (checked), `type`, `id`, the `error` body.
struct ReplyEnvelope<Key: ReplyEnvelopeKey> {
    let container: KeyedDecodingContainer<Key>
    let type: String
    let id: RequestID?

    init(_ decoder: any Decoder) throws {
        container = try decoder.container(keyedBy: Key.self)
        let version = try container.decode(Int.self, forKey: .version)
        guard version == protocolVersion else {
            throw DecodingError.dataCorruptedError(forKey: .version, in: container, debugDescription: "unsupported protocol version \(version)")
        }
        id = try container.decodeIfPresent(RequestID.self, forKey: .id)
        type = try container.decode(String.self, forKey: .type)
    }

    /// The refusal in an `error` reply.
    func error() throws -> ProtocolError {
        let body = try container.decode(ErrorBody.self, forKey: .error)
        return ProtocolError(body.code, body.message, id: id)
    }

    /// The error for a `type` this client does not know.
    var unknownType: DecodingError {
        DecodingError.dataCorruptedError(forKey: .type, in: container, debugDescription: "unknown message type \(type)")
    }

    /// `{"code": …, "message": …}`
    struct ErrorBody: Codable {
        var code: ProtocolError.Code
        var message: String
    }
}
