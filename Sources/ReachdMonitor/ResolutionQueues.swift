/// Who asked for a name to be resolved: a local user (by uid, as the kernel reported the peer), or the
/// daemon itself (watched hosts resolved again, the connectivity check, the captive-portal API).
public enum ResolutionRequester: Hashable, Sendable {
    case user(UInt32)
    case daemon
}

/// Which name lookup runs next, so that no requester's slow names delay another's: one queue per
/// requester, served in turn (round robin), each with at most `runningPerRequester` lookups on the
/// resolver's threads at once. A name asked for by several requesters stands in each of their queues and is
/// resolved once, by whichever turn comes first. A pure value; `HostResolver` is its shell.
struct ResolutionQueues: Sendable {
    /// Lookups of one requester that run at once (the resolver has more threads than this, so another
    /// requester always finds one free unless several others keep theirs busy).
    let runningPerRequester: Int
    private var queues: [ResolutionRequester: [String]] = [:]
    /// Requesters with queued names, in the order their turns come.
    private var turns: [ResolutionRequester] = []
    private var running: [ResolutionRequester: Int] = [:]
    /// Names being resolved now, and who ran each.
    private var runningNames: [String: ResolutionRequester] = [:]

    init(runningPerRequester: Int) {
        self.runningPerRequester = max(1, runningPerRequester)
    }

    /// Names waiting in any queue (each counted once per queue it stands in).
    var queuedCount: Int { queues.values.reduce(0) { $0 + $1.count } }

    /// Whether `name` is being resolved now or waits in some queue: a new asker only waits for that answer
    /// (and stands in its own queue too, so its turn can start it).
    func isPending(_ name: String) -> Bool {
        runningNames[name] != nil || queues.values.contains { $0.contains(name) }
    }

    /// Queues `name` for `requester` unless it is running already or already in that requester's queue.
    mutating func enqueue(_ name: String, for requester: ResolutionRequester) {
        guard runningNames[name] == nil, queues[requester]?.contains(name) != true else { return }
        if queues[requester, default: []].isEmpty, !turns.contains(requester) { turns.append(requester) }
        queues[requester, default: []].append(name)
    }

    /// The next lookup to start: the first queued name of the first requester in turn that is below its
    /// running limit; that requester's turn moves to the back. The name leaves every queue it stood in.
    mutating func next() -> (name: String, requester: ResolutionRequester)? {
        guard let position = turns.firstIndex(where: { running[$0, default: 0] < runningPerRequester }) else { return nil }
        let requester = turns.remove(at: position)
        let name = queues[requester]!.removeFirst()
        if queues[requester]!.isEmpty { queues[requester] = nil } else { turns.append(requester) }
        for (other, names) in queues where names.contains(name) {
            queues[other] = names.filter { $0 != name }
            if queues[other]!.isEmpty {
                queues[other] = nil
                turns.removeAll { $0 == other }
            }
        }
        running[requester, default: 0] += 1
        runningNames[name] = requester
        return (name, requester)
    }

    /// The lookup of `name` ended.
    mutating func finished(_ name: String) {
        guard let requester = runningNames.removeValue(forKey: name) else { return }
        running[requester, default: 1] -= 1
        if running[requester] == 0 { running[requester] = nil }
    }
}
