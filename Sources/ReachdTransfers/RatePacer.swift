import ReachdModel
import ReachdTransferModel
import Synchronization

/// A cap several transfers share (the instance's `max_rate`, its `metered_max_rate`): one token bucket.
final class SharedRate: Sendable {
    private let bucket: Mutex<TokenBucket>
    let bytesPerSecond: Int64

    init(bytesPerSecond: Int64) {
        self.bytesPerSecond = bytesPerSecond
        bucket = Mutex(TokenBucket(rate: bytesPerSecond, now: RatePacer.seconds()))
    }

    func take(_ bytes: Int, now: Double) -> Double { bucket.withLock { $0.take(bytes, now: now) } }
}

/// Paces one transfer attempt: its body is read (a download) or handed over (an upload) no faster than the job's own
/// cap, the instance's and, while its route is metered, the instance's metered one allow; a yielding download no
/// faster than its receive window lets through, a yielding upload within its window (`YieldingConnection`). The
/// scheduler changes the job's cap and the route's cost while the attempt runs; each takes effect at the next piece.
/// One wait is at most `longestWait` (half the read timeout): a server that sends nothing for that long loses the
/// connection, paced or not, so a cap below what one read brings per half a read timeout (about 17 KiB/s at the
/// default 30 s) is not met.
final class RatePacer: Sendable {
    private struct State {
        var own: TokenBucket?
        var metered = false
        var yielding: TokenBucket?
        /// A yielding upload's connection, which admits each piece into its window.
        var sendingGate: YieldingConnection?
    }

    private let state: Mutex<State>
    private let instance: SharedRate?
    private let meteredInstance: SharedRate?
    private let longestWait: Double

    init(bytesPerSecond: Int64?, metered: Bool, instance: SharedRate?, meteredInstance: SharedRate?, longestWait: Double) {
        let now = Self.seconds()
        state = Mutex(State(own: bytesPerSecond.map { TokenBucket(rate: $0, now: now) }, metered: metered))
        self.instance = instance
        self.meteredInstance = meteredInstance
        self.longestWait = longestWait
    }

    /// A yielding download's pace from now on: what its receive window lets through per round trip (nil: none). Reading
    /// no faster holds the server back on kernels that do not shrink a window already offered (before Linux 6.7).
    func yield(bytesPerSecond: Int64?) {
        let now = Self.seconds()
        state.withLock { state in
            guard let bytesPerSecond else { state.yielding = nil; return }
            if state.yielding == nil { state.yielding = TokenBucket(rate: bytesPerSecond, now: now) } else { state.yielding?.setRate(bytesPerSecond, now: now) }
        }
    }

    /// A yielding upload's connection from now on (nil: none): each piece waits for room in its window (`admit`), and
    /// pieces are no larger than a quarter of it.
    func gateSending(by connection: YieldingConnection?) {
        state.withLock { $0.sendingGate = connection }
    }

    /// Waits until a yielding upload's window has room for `bytes` more; at once when there is none.
    func admit(_ bytes: Int) async {
        await state.withLock { $0.sendingGate }?.admit(bytes)
    }

    /// Seconds on the monotonic clock.
    static func seconds() -> Double { MonotonicClock.seconds() }

    /// The job's own cap from now on (nil: none), and whether its route is metered.
    func change(bytesPerSecond: Int64?, metered: Bool) {
        let now = Self.seconds()
        state.withLock { state in
            state.metered = metered
            guard let bytesPerSecond else { state.own = nil; return }
            if state.own == nil { state.own = TokenBucket(rate: bytesPerSecond, now: now) } else { state.own?.setRate(bytesPerSecond, now: now) }
        }
    }

    /// The lowest cap that applies now, in bytes per second; nil: none.
    var lowestRate: Int64? {
        state.withLock { state in
            [state.own?.rate, instance?.bytesPerSecond, state.metered ? meteredInstance?.bytesPerSecond : nil].compactMap { $0 }.min()
        }
    }

    /// Counts `bytes` moved and waits as long as the caps ask; returns at once when none applies, early when cancelled.
    func take(_ bytes: Int) async {
        let now = Self.seconds()
        let (own, yielding, metered) = state.withLock { state in
            (state.own != nil ? state.own!.take(bytes, now: now) : 0, state.yielding != nil ? state.yielding!.take(bytes, now: now) : 0,
             state.metered)
        }
        let shared = instance?.take(bytes, now: now) ?? 0
        let onMetered = metered ? (meteredInstance?.take(bytes, now: now) ?? 0) : 0
        let wait = min(longestWait, max(own, yielding, shared, onMetered))
        guard wait > 0 else { return }
        try? await Task.sleep(for: .seconds(wait))
    }

    /// The size of the pieces a capped body moves in: a tenth of a second's worth at the lowest cap (16 KiB at
    /// least), else `largest`; a yielding upload's no larger than its window allows.
    func pieceBytes(largest: Int) -> Int {
        let gated = state.withLock { $0.sendingGate }?.pieceBytes(largest: largest) ?? largest
        guard let rate = lowestRate else { return gated }
        return Int(min(Int64(gated), max(16 * 1024, rate / 10)))
    }
}
