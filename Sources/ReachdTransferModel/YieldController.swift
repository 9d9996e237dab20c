/// A background transfer's share of the path, as LEDBAT (RFC 6817) and, for a receiver, RFC 9840 (rLEDBAT) decide it:
/// the queueing delay is the connection's round-trip time (a download's receive-side estimate from TCP timestamps, an
/// upload's smoothed one of the ACKs) above the lowest one seen in the last minutes; the window (the receive window
/// the server may fill, or what an upload may hand the kernel, `SendAdmission`) grows while the delay stays below
/// `target` and shrinks, down to two segments, as far as it passes it. Times in seconds, windows in bytes.
public struct YieldController: Sendable {
    /// The queueing delay a background transfer may add.
    public static let target = 0.015
    /// Minutes of lowest round trips kept: the path's base delay is their minimum.
    static let baseMinutes = 10

    /// The connection's segments (a download's receive MSS, an upload's send MSS): a window is never below two of them,
    /// since a sender waits (for its persist timer, 200 ms or more) rather than send a segment that does not fit.
    public private(set) var segment: Int
    public private(set) var maximum: Int
    public private(set) var window: Int
    /// The lowest round trip of each of the last minutes, newest last.
    private var base: [(minute: Int, rtt: Double)] = []
    private var lastStep: Double

    /// Whether the window still doubles each round trip (LEDBAT++'s slow start), until the queueing delay first passes
    /// three quarters of the target or the window reaches `maximum`.
    public private(set) var isStarting: Bool

    /// Starts at `initial` (by default a tenth of `maximum`, the socket's receive buffer), at least four segments;
    /// with `slowStart`, doubling.
    public init(maximum: Int, initial: Int? = nil, segment: Int = 1448, slowStart: Bool = false, now: Double) {
        self.segment = segment
        self.maximum = max(maximum, 4 * segment)
        window = max(4 * segment, min(self.maximum, initial ?? maximum / 10))
        isStarting = slowStart
        lastStep = now
    }

    public var minimum: Int { 2 * segment }

    /// The connection's segment size, once the kernel knows it (a loopback's is 64 KiB, a jumbo frame's 9 KB).
    public mutating func use(segment: Int) {
        guard segment > 0, segment != self.segment else { return }
        self.segment = segment
        maximum = max(maximum, minimum)
        window = max(minimum, min(maximum, window))
    }

    /// The path's base delay: the lowest round trip of the kept minutes.
    public var baseDelay: Double? { base.map(\.rtt).min() }

    /// Keeps `rtt` as a candidate for this minute's lowest round trip.
    private mutating func sample(base rtt: Double, now: Double) {
        let minute = Int(now / 60)
        if let last = base.last, last.minute == minute {
            base[base.count - 1].rtt = min(last.rtt, rtt)
        } else {
            base.append((minute, rtt))
            base.removeAll { $0.minute <= minute - Self.baseMinutes }
        }
    }

    /// Whether the transfer is giving way now: the latest queueing delay was past the target.
    public private(set) var isYielding = false

    /// Takes a round-trip sample at `now`, with the connection's lowest round trip so far (`pathMinimum`: the kernel's,
    /// from the handshake on, before any queue) when known; returns the new window when it changed. The window moves
    /// once per round trip (every 10 ms at most): by up to four segments up (doubling while starting), by up to half
    /// down.
    public mutating func sample(rtt: Double, now: Double, pathMinimum: Double? = nil) -> Int? {
        guard rtt > 0, rtt.isFinite else { return nil }
        if let pathMinimum, pathMinimum > 0, pathMinimum < rtt { sample(base: pathMinimum, now: now) }
        sample(base: rtt, now: now)
        guard let floor = baseDelay, now - lastStep >= max(0.01, rtt) else { return nil }
        lastStep = now
        let offTarget = max(-1, min(1, (Self.target - (rtt - floor)) / Self.target))
        isYielding = offTarget < 0
        if isStarting, offTarget < 0.25 || window >= maximum { isStarting = false }
        let next = isStarting ? 2 * window : offTarget >= 0
            ? window + Int(offTarget * Double(4 * segment))
            : Int(Double(window) * (1 + 0.5 * offTarget))
        let bounded = max(minimum, min(maximum, next))
        guard bounded != window else { return nil }
        window = bounded
        return bounded
    }
}
