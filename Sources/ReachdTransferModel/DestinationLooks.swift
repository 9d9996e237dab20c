/// The free space of jobs' destinations as last looked at (`statvfs`, which the shell runs off the scheduler, one
/// look at a time per directory): what `storageNotLow` weighs, and when to look again. A look that has not
/// answered within `answerSeconds` (a hung NFS server, a FUSE mount that blocks) makes that directory's jobs wait,
/// and only theirs. Pure: the monotonic time is passed in.
public struct DestinationLooks: Sendable {
    /// What the gate is told of a destination.
    public enum Answer: Hashable, Sendable {
        /// Free bytes as last read; nil when they cannot be read (satisfies `storageNotLow`).
        case free(Int64?)
        /// The first look has not answered yet.
        case reading
        /// A look has not answered for `answerSeconds`.
        case notAnswering
    }

    /// A look older than this is taken again (`TransferGate.storagePollSeconds`).
    public static let lookSeconds = UInt64(TransferGate.storagePollSeconds)
    /// A look that has not answered after this long: the destination does not answer.
    public static let answerSeconds: UInt64 = 5
    /// Looks under way at most (each a thread that a hung file system may hold for good).
    public static let maximumLooking = 16
    /// Directories remembered at most; beyond, those not being looked at and out of date are forgotten.
    public static let maximumEntries = 1024

    private struct Entry: Sendable {
        var bytes: Int64?? = nil
        var lookedAt: UInt64?
        var lookingSince: UInt64?
    }

    private var entries: [String: Entry] = [:]

    public init() {}

    /// What to tell the gate of `directory` at `now` (ns), and whether a look must start now (it is then counted
    /// as under way until `looked`).
    public mutating func answer(for directory: String, now: UInt64) -> (answer: Answer, look: Bool) {
        var entry = entries[directory] ?? Entry()
        let last: Answer = entry.bytes.map { .free($0) } ?? .reading
        if let since = entry.lookingSince {
            return (now &- since >= Self.answerSeconds * 1_000_000_000 ? .notAnswering : last, false)
        }
        if let at = entry.lookedAt, now &- at < Self.lookSeconds * 1_000_000_000 { return (last, false) }
        // So many looks hang that no more are started: a destination never read counts as unreadable, never as
        // waiting for a look that cannot come.
        guard entries.values.count(where: { $0.lookingSince != nil }) < Self.maximumLooking else { return (last == .reading ? .free(nil) : last, false) }
        if entries[directory] == nil, entries.count >= Self.maximumEntries { forgetOld(now: now) }
        entry.lookingSince = now
        entries[directory] = entry
        return (last, true)
    }

    /// A look at `directory` answered: `bytes` free (nil: unreadable).
    public mutating func looked(_ directory: String, bytes: Int64?, now: UInt64) {
        entries[directory] = Entry(bytes: .some(bytes), lookedAt: now, lookingSince: nil)
    }

    private mutating func forgetOld(now: UInt64) {
        entries = entries.filter { _, entry in
            entry.lookingSince != nil || entry.lookedAt.map { now &- $0 < Self.lookSeconds * 1_000_000_000 } ?? false
        }
    }
}
