/// Bytes the queue's transfers moved on each link that reachd-transfers has not seen in the link's budget count yet:
/// reachd reads the counters every 2 s and tells a count alone to no subscriber (only a change of the budget's state),
/// so the count a job is judged on can lag by a whole transfer. `within-budget` weighs these bytes as used until a
/// count that holds them is seen. Pure.
public struct UncountedBudgetBytes: Sendable {
    private struct Link: Sendable {
        var uncounted: UInt64 = 0
        /// The budget's used bytes as last seen; nil before the first.
        var seen: UInt64?
    }

    private var links: [String: Link] = [:]
    /// Each running attempt's last position told, by job id.
    private var positions: [String: Int64] = [:]

    public init() {}

    /// An attempt starts at `offset` of its file.
    public mutating func started(_ id: String, at offset: Int64) {
        positions[id] = offset
    }

    /// The attempt of `id` got to `position`, over `link` (nil: not known; nothing counted).
    public mutating func moved(_ id: String, to position: Int64, on link: String?) {
        let last = positions[id] ?? position
        positions[id] = position
        guard let link, position > last else { return }
        var entry = links[link] ?? Link()
        entry.uncounted = entry.uncounted.addingSaturated(UInt64(position - last))
        links[link] = entry
    }

    /// The attempt of `id` ended at `position` (what its file holds, or an upload's last position).
    public mutating func ended(_ id: String, at position: Int64, on link: String?) {
        moved(id, to: position, on: link)
        positions[id] = nil
    }

    /// The bytes on `link` that its budget's count (`used`, as seen now; nil: no budget known) does not hold yet.
    /// What the count grew by since it was last seen is taken as counted; a count that went down began a new period,
    /// which holds nothing moved before.
    public mutating func uncounted(on link: String, used: UInt64?) -> UInt64 {
        guard var entry = links[link] else { return 0 }
        if let used, let seen = entry.seen {
            entry.uncounted = used >= seen ? entry.uncounted - min(entry.uncounted, used - seen) : 0
        }
        entry.seen = used ?? entry.seen
        links[link] = entry
        return entry.uncounted
    }
}
