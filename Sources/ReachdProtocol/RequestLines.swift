/// A daemon's reading of request lines, the same for reachd and reachd-transfers: lines of at most
/// `maximumRequestLineLength` bytes, each one a request to parse or, when it is too long, the `line_too_long`
/// error to answer (the line is skipped, the connection stays); lines of nothing but spaces and tabs are
/// skipped unanswered.
public struct RequestLines: Sendable {
    private var framer = LineFramer(maximumLineLength: maximumRequestLineLength)

    public init() {}

    /// Feeds bytes read from the client; returns the lines they complete, in order.
    public mutating func append<Bytes: Collection>(_ bytes: Bytes) -> [Result<[UInt8], ProtocolError>] where Bytes.Element == UInt8 {
        framer.append(bytes).compactMap { frame in
            switch frame {
            case .oversized:
                return .failure(ProtocolError(.lineTooLong, "request lines are limited to \(maximumRequestLineLength) bytes"))
            case .line(let line):
                return line.contains(where: { $0 != 0x20 && $0 != 0x09 }) ? .success(line) : nil
            }
        }
    }
}
