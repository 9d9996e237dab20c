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
        if let frames = bytes.withContiguousStorageIfAvailable({ append(contiguous: $0) }) { return frames }
        return Array(bytes).withUnsafeBufferPointer { append(contiguous: $0) }
    }

    /// The work of `append`, a run of bytes up to each newline at a time (a client reading a thousand
    /// event lines spent most of its time here when this went byte by byte through the generic collection).
    private mutating func append(contiguous bytes: UnsafeBufferPointer<UInt8>) -> [Frame] {
        var frames: [Frame] = []
        var start = 0
        while start < bytes.count {
            let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n"))
            let end = newline ?? bytes.count
            if !discarding {
                if pending.count + (end - start) > maximumLineLength {
                    frames.append(.oversized)
                    discarding = true
                    pending.removeAll(keepingCapacity: false)
                } else {
                    pending.append(contentsOf: bytes[start..<end])
                }
            }
            guard let newline else { break }
            if discarding {
                discarding = false
            } else {
                if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
                frames.append(.line(pending))
            }
            pending.removeAll(keepingCapacity: true)
            start = newline + 1
        }
        return frames
    }

    /// Bytes of an unfinished line held so far.
    public var bufferedByteCount: Int { pending.count }
}
