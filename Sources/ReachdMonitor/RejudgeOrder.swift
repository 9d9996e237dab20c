/// The order in which the watched hosts are judged again after a network change: each requester's hosts in slices
/// of `sliceSize`, the requesters in turn (the one that watches fewest first), so that one user's many hosts delay
/// another's host by at most one slice of each requester ahead of it, never by all of them. Each requester's hosts
/// are its own (`HostKey`): a host that several watch is in a slice of each. Pure.
enum RejudgeOrder {
    /// Hosts of one requester judged in one batch.
    struct Slice: Equatable {
        let requester: ResolutionRequester
        let hosts: [String]
    }

    /// Hosts judged (one batch of route lookups) between two looks at whether the network changed again.
    static let sliceSize = 256

    /// The slices, in the order they are judged, of the hosts each requester watches.
    static func slices(of watched: [ResolutionRequester: [String: Int]], sliceSize: Int = sliceSize) -> [Slice] {
        let size = max(1, sliceSize)
        let queues = watched.sorted { ($0.value.count, rank($0.key)) < ($1.value.count, rank($1.key)) }
            .map { (requester: $0.key, hosts: $0.value.keys.sorted()) }
        var next = [Int](repeating: 0, count: queues.count)
        var slices: [Slice] = []
        var left = queues.contains { !$0.hosts.isEmpty }
        while left {
            left = false
            for (turn, queue) in queues.enumerated() where next[turn] < queue.hosts.count {
                let end = min(next[turn] + size, queue.hosts.count)
                slices.append(Slice(requester: queue.requester, hosts: Array(queue.hosts[next[turn]..<end])))
                next[turn] = end
                if end < queue.hosts.count { left = true }
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
