/// When HostMonitor resolves its watched hosts again after network changes: one pass at a time, and one more
/// when the network changed during it, however often (never a task per host per change). A pure value.
struct ResolutionPasses: Sendable, Equatable {
    /// A pass runs.
    private(set) var running = false
    /// The network changed while it ran.
    private var changedDuring = false

    /// The network changed and watched hosts lack a resolution: true when a pass is to start now.
    mutating func networkChanged() -> Bool {
        if running {
            changedDuring = true
            return false
        }
        running = true
        return true
    }

    /// The running pass is done: true when another is to run now.
    mutating func passEnded() -> Bool {
        if changedDuring {
            changedDuring = false
            return true
        }
        running = false
        return false
    }
}
