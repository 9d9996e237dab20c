/// A yielding upload's window, kept in user space (a sender cannot set TCP's own): the body hands the socket a piece
/// only once what the kernel holds of the connection (sent and not acknowledged, or not sent yet) leaves room for it
/// within the window `YieldController` decides, so no more is ever in flight, whatever the kernel's congestion
/// control would send. Times in seconds, sizes in bytes.
public struct SendWindow: Sendable, Equatable {
    /// Bytes the server acknowledged per second, smoothed over the readings (0: not known yet).
    public private(set) var drainRate = 0.0
    private var acknowledged: UInt64 = 0
    private var readAt: Double?

    public init() {}

    /// The kernel's count of acknowledged bytes (`tcpi_bytes_acked`) at `now`, read every few milliseconds.
    public mutating func read(acknowledged total: UInt64, now: Double) {
        if let readAt, now > readAt, total >= acknowledged {
            let rate = Double(total - acknowledged) / (now - readAt)
            drainRate = drainRate == 0 ? rate : 0.875 * drainRate + 0.125 * rate
        }
        (acknowledged, readAt) = (total, now)
    }

    /// How long to wait before asking again whether `bytes` more fit `window` with `queued` held by the kernel; nil:
    /// they may go now (always when nothing is held, so that a piece larger than the window still goes alone). As
    /// long as the excess takes to drain at the rate the server acknowledges, within 1 to 10 ms.
    public func wait(queued: Int, adding bytes: Int, window: Int) -> Double? {
        let excess = queued + bytes - window
        guard queued > 0, excess > 0 else { return nil }
        guard drainRate > 0 else { return 0.002 }
        return min(0.01, max(0.001, Double(excess) / drainRate))
    }

    /// The size of the pieces handed to the socket: a quarter of the window in whole segments, one segment at least,
    /// `largest` at most.
    public static func pieceBytes(window: Int, segment: Int, largest: Int) -> Int {
        let segment = max(1, segment)
        return max(1, min(largest, max(segment, window / 4 / segment * segment)))
    }
}
