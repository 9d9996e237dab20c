/// The deadlines `OffLoopTimers` keeps, and when a change must wake its thread. A pure value; times are
/// monotonic nanoseconds.
///
/// The thread sleeps towards the earliest deadline, or without a limit when there is none. A new deadline
/// before the one it sleeps towards wakes it; so does taking back the last one, so that it does not wake
/// later for nothing. Taking back any other one does not: it wakes at the old deadline and sleeps again.
struct DeadlineQueue<Item> {
    private var entries: [UInt64: (deadline: UInt64, item: Item)] = [:]
    private var lastToken: UInt64 = 0
    /// The deadline the thread sleeps towards; nil while it sleeps without a limit.
    private(set) var sleepingUntil: UInt64?

    var isEmpty: Bool { entries.isEmpty }

    /// Adds `item`, due at `deadline`; `wake` says whether the thread must wake to sleep less.
    mutating func add(_ item: Item, at deadline: UInt64) -> (token: UInt64, wake: Bool) {
        lastToken &+= 1
        entries[lastToken] = (deadline, item)
        return (lastToken, sleepingUntil.map { deadline < $0 } ?? true)
    }

    /// Takes an item back (once due, it is gone already); true when the thread must wake.
    mutating func remove(_ token: UInt64) -> Bool {
        guard entries.removeValue(forKey: token) != nil else { return false }
        return entries.isEmpty && sleepingUntil != nil
    }

    /// Removes and returns the items due at `now`, earliest first.
    mutating func takeDue(now: UInt64) -> [Item] {
        let due = entries.filter { $0.value.deadline <= now }.sorted { $0.value.deadline < $1.value.deadline }
        for (token, _) in due { entries[token] = nil }
        return due.map(\.value.item)
    }

    /// How long the thread sleeps from `now`, in ms for `poll` (rounded up; -1: without a limit), noted.
    mutating func sleep(now: UInt64) -> Int32 {
        sleepingUntil = entries.values.map(\.deadline).min()
        guard let deadline = sleepingUntil else { return -1 }
        guard deadline > now else { return 0 }
        return Int32(clamping: (deadline - now + 999_999) / 1_000_000)
    }
}
