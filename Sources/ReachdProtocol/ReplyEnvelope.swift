/// The coding keys every reply type has.
package protocol ReplyEnvelopeKey: CodingKey {
    static var version: Self { get }
    static var type: Self { get }
    static var id: Self { get }
    static var error: Self { get }
}

/// What every reply line shares when it is read: `version` (checked), `type`, `id`, the `error` body.
package struct ReplyEnvelope<Key: ReplyEnvelopeKey> {
    package let container: KeyedDecodingContainer<Key>
    package let type: String
    package let id: RequestID?

    package init(_ decoder: any Decoder) throws {
        container = try decoder.container(keyedBy: Key.self)
        let version = try container.decode(Int.self, forKey: .version)
        guard version == protocolVersion else {
            throw DecodingError.dataCorruptedError(forKey: .version, in: container, debugDescription: "unsupported protocol version \(version)")
        }
        id = try container.decodeIfPresent(RequestID.self, forKey: .id)
        type = try container.decode(String.self, forKey: .type)
    }

    /// The refusal in an `error` reply.
    package func error() throws -> ProtocolError {
        let body = try container.decode(ErrorBody.self, forKey: .error)
        return ProtocolError(body.code, body.message, id: id)
    }

    /// The error for a `type` this client does not know.
    package var unknownType: DecodingError {
        DecodingError.dataCorruptedError(forKey: .type, in: container, debugDescription: "unknown message type \(type)")
    }

    /// `{"code": …, "message": …}`
    package struct ErrorBody: Codable {
        package var code: ProtocolError.Code
        package var message: String

        package init(code: ProtocolError.Code, message: String) {
            self.code = code
            self.message = message
        }
    }
}
