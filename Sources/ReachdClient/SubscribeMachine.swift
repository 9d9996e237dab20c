/// What a subscription does when reachd goes away or refuses it.
public enum SubscribeRetry: Sendable, Hashable {
    /// One connection: its end, or a refusal, ends the subscription (reported once).
    case never
    /// Connect again: 0.1 s after a drop, the wait doubling to 5 s while reachd stays away (back to 0.1 s once
    /// a verdict came, or a connection opened when `SubscribeMachine.connectionEndsOutage`); a refused subscription is asked for again 5 s later. Each outage is reported once.
    case backoff
}

/// The rules of a subscription to reachd's `subscribe` stream, pure: an event in, the next state and the actions
/// out. `SubscribeReader` carries the actions out; the table is in `SubscribeMachineTests`.
public struct SubscribeMachine: Sendable, Hashable {
    public enum Phase: Sendable, Hashable {
        /// Not started.
        case idle
        /// A connection is being opened (and `subscribe` sent).
        case connecting
        /// Connected; the `subscribed` answer has not come yet.
        case subscribing
        /// Verdicts are coming.
        case subscribed
        /// Waiting for the retry timer (no connection open).
        case waiting
        /// Ended; nothing is done any more.
        case stopped
    }

    public enum Event: Sendable, Hashable {
        /// The owner starts the subscription.
        case start
        /// The connection is open and `subscribe` was sent.
        case connected
        /// Verdicts arrived: the `subscribed` answer, or an `event`.
        case verdicts
        /// The connection could not be opened, or it ended, or failed.
        case lost(ClientError)
        /// reachd refused the subscription (an `error` answer, as `ClientError.Failure.refused`).
        case refused(ClientError)
        /// The retry timer fired.
        case timerFired
        /// The owner stops the subscription.
        case stop
    }

    public enum Action: Sendable, Hashable {
        /// Open a connection and send `subscribe`.
        case connect
        /// Close the connection if one is open, and fire `timerFired` after this many milliseconds.
        case wait(milliseconds: Int)
        /// Tell the owner that reachd's verdicts are not coming, and why.
        case reportUnreachable(ClientError)
        /// Hand the verdicts that arrived to the owner.
        case deliver
        /// Tell the owner a connection is open (it subscribes what it needs on it): only when
        /// `connectionEndsOutage`.
        case announceConnected
        /// Close the connection and end.
        case stop
    }

    /// The first wait after a drop, and the longest, in milliseconds.
    public static let firstRetry = 100, lastRetry = 5000
    /// The wait before a refused subscription is asked for again, in milliseconds.
    public static let refusedRetry = 5000

    public let retry: SubscribeRetry
    public private(set) var phase: Phase
    /// The wait after the next drop, in milliseconds.
    public private(set) var retryDelay: Int
    /// Whether this outage was reported (once per outage: a verdict ends it, or a connection when
    /// `connectionEndsOutage`).
    public private(set) var reported: Bool
    /// Whether an open connection ends an outage, before any verdict: for an owner that sends its own requests
    /// on it (none may be due yet), told by `announceConnected`.
    public let connectionEndsOutage: Bool

    public init(retry: SubscribeRetry, phase: Phase = .idle, retryDelay: Int = SubscribeMachine.firstRetry, reported: Bool = false,
                connectionEndsOutage: Bool = false) {
        self.retry = retry
        self.phase = phase
        self.retryDelay = retryDelay
        self.reported = reported
        self.connectionEndsOutage = connectionEndsOutage
    }

    /// Takes `event`; the actions to carry out, in order.
    public mutating func handle(_ event: Event) -> [Action] {
        switch (phase, event) {
        case (.stopped, _):
            return []
        case (_, .stop):
            phase = .stopped
            return [.stop]
        case (.idle, .start), (.waiting, .timerFired):
            phase = .connecting
            return [.connect]
        case (.connecting, .connected) where connectionEndsOutage:
            phase = .subscribed
            retryDelay = Self.firstRetry
            reported = false
            return [.announceConnected]
        case (.connecting, .connected):
            phase = .subscribing
            return []
        case (.subscribing, .verdicts), (.subscribed, .verdicts):
            phase = .subscribed
            retryDelay = Self.firstRetry
            reported = false
            return [.deliver]
        case (.connecting, .lost(let error)), (.subscribing, .lost(let error)), (.subscribed, .lost(let error)):
            return failed(error, wait: retryDelay, backingOff: true)
        case (.subscribing, .refused(let error)), (.subscribed, .refused(let error)):
            return failed(error, wait: Self.refusedRetry, backingOff: false)
        default:
            // A stale event (a timer or an answer from a connection given up): nothing to do.
            return []
        }
    }

    private mutating func failed(_ error: ClientError, wait: Int, backingOff: Bool) -> [Action] {
        let report: [Action] = reported ? [] : [.reportUnreachable(error)]
        reported = true
        switch retry {
        case .never:
            phase = .stopped
            return report + [.stop]
        case .backoff:
            phase = .waiting
            if backingOff { retryDelay = min(retryDelay * 2, Self.lastRetry) }
            return report + [.wait(milliseconds: wait)]
        }
    }
}
