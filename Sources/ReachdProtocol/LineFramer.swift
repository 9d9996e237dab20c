/// Splits a byte stream into newline-terminated lines with a length limit.
///
/// A line longer than `maximumLineLength` is reported once as `.oversized` and its bytes are
/// discarded up to the next newline, so one bad line never swallows the ones after it.
public struct LineFramer: Sendable {
    /// One unit the framer recognised.
    public enum Frame: Hashable, Sendable {
        /// A complete line, without its `\n` (and without a trailing `\r`).
        case line([UInt8])
        /// A line went over the limit; it was dropped.
        case oversized
    }

    public let maximumLineLength: Int
    private var pending: [UInt8] = []
    private var discarding = false

    public init(maximumLineLength: Int) {
        precondition(maximumLineLength > 0)
        self.maximumLineLength = maximumLineLength
    }

    /// Feeds bytes; returns the frames they complete, in order.
    public mutating func append<Bytes: Collection>(_ bytes: Bytes) -> [Frame] where Bytes.Element == UInt8 {
        var frames: [Frame] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                if discarding {
                    discarding = false
                } else {
                    if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
                    frames.append(.line(pending))
                }
                pending.removeAll(keepingCapacity: true)
                continue
            }
            if discarding { continue }
            pending.append(byte)
            if pending.count > maximumLineLength {
                frames.append(.oversized)
                discarding = true
                pending.removeAll(keepingCapacity: false)
            }
        }
        return frames
    }

    /// Bytes of an unfinished line held so far.
    public var bufferedByteCount: Int { pending.count }
}
