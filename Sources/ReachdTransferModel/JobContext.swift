import ReachdModel

/// The job's host and the verdict last heard for it (nil: none yet), with the facts its constraints weigh.
public struct JobRoute: Hashable, Sendable {
    public var host: String
    public var verdict: Verdict?
    public var facts: GateFacts

    public init(host: String, verdict: Verdict?, facts: GateFacts = GateFacts()) {
        self.host = host
        self.verdict = verdict
        self.facts = facts
    }
}

/// The clock and the randomness one event sees, passed in so the machine stays pure.
public struct JobMoment: Hashable, Sendable {
    /// Wall-clock time: job timestamps, retry and refresh times.
    public var now: Timestamp
    /// Monotonic seconds: checkpoint and event pacing.
    public var monotonic: Double
    /// In 0...1: spreads retry delays (RetryPolicy).
    public var jitter: Double

    public init(now: Timestamp, monotonic: Double, jitter: Double) {
        self.now = now
        self.monotonic = monotonic
        self.jitter = jitter
    }
}

/// The settings every job machine follows.
public struct JobRules: Sendable {
    public var gate: TransferGate
    /// The local time zone daily windows and wait reasons are read in.
    public var zone: any LocalTimeZone
    public var retry: RetryPolicy
    public var checkpoint: ProgressCheckpoint
    /// Progress events to watchers at most this often per job.
    public var eventIntervalSeconds: Double

    public init(gate: TransferGate = TransferGate(), retry: RetryPolicy = RetryPolicy(), checkpoint: ProgressCheckpoint = ProgressCheckpoint(),
                eventIntervalSeconds: Double = 0.25, zone: any LocalTimeZone = SystemTimeZone()) {
        self.gate = gate
        self.zone = zone
        self.retry = retry
        self.checkpoint = checkpoint
        self.eventIntervalSeconds = eventIntervalSeconds
    }
}
