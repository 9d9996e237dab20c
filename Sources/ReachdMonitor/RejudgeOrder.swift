/// The order in which the watched hosts are judged again after a network change: each requester's hosts in slices
/// of `sliceSize`, the requesters in turn (the one that watches fewest first), so that one user's many hosts delay
/// another's host by at most one slice of each requester ahead of it, never by all of them. A host that several
/// requesters watch is judged once, in the first slice that reaches it. Pure.
enum RejudgeOrder {
    /// Hosts judged (one batch of route lookups) between two looks at whether the network changed again.
    static let sliceSize = 256

    /// The slices, in the order they are judged, of the hosts each requester watches.
    static func slices(of watched: [ResolutionRequester: [String: Int]], sliceSize: Int = sliceSize) -> [[String]] {
        let size = max(1, sliceSize)
        let queues = watched.sorted { ($0.value.count, rank($0.key)) < ($1.value.count, rank($1.key)) }
            .map { $0.value.keys.sorted() }
        var next = [Int](repeating: 0, count: queues.count)
        var judged: Set<String> = []
        var slices: [[String]] = []
        var left = queues.contains { !$0.isEmpty }
        while left {
            left = false
            for (turn, queue) in queues.enumerated() {
                var slice: [String] = []
                while next[turn] < queue.count, slice.count < size {
                    let host = queue[next[turn]]
                    next[turn] += 1
                    if judged.insert(host).inserted { slice.append(host) }
                }
                if !slice.isEmpty { slices.append(slice) }
                if next[turn] < queue.count { left = true }
            }
        }
        return slices
    }

    /// A fixed order among requesters that watch as many hosts: the daemon's own first, then by uid.
    private static func rank(_ requester: ResolutionRequester) -> Int64 {
        switch requester {
        case .daemon: -1
        case .user(let uid): Int64(uid)
        }
    }
}
