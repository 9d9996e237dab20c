import ReachdModel
import ReachdNetlink
import ReachdSystem

/// Judging the watched hosts again after a network change, off the thread that reported it: the watcher publishes
/// the internet verdict and goes back to the kernel's messages at once, whatever number of hosts is watched. A
/// pass judges the hosts in `RejudgeOrder`'s slices (each one batch of route lookups, its changes published as soon
/// as it is judged), requesters in turn, so that one user's many hosts hold another user's few back by at most a
/// slice; a change that comes during a pass ends it at its next slice, and a new pass starts from the newest
/// snapshot.
extension HostMonitor {
    /// Starts the passes on a thread of their own (the calling thread when none can be had).
    func rejudgeSoon() {
        do {
            try DetachedThread.start { self.rejudgeUntilCurrent() }
        } catch {
            logger.warning("no thread to judge the watched hosts on (\(error)); judging them here")
            rejudgeUntilCurrent()
        }
    }

    /// Runs passes until one was made for the latest change.
    private func rejudgeUntilCurrent() {
        while let (change, watched) = nextPass() {
            let started = ContinuousClock.now
            var judged = 0, changed = 0, cutShort = false
            // reachd's own routes, asked once per pass whoever's hosts lead to them.
            var known: [IPAddress: RouteDecision] = [:]
            for slice in RejudgeOrder.slices(of: watched) {
                let key = { (host: String) in HostKey(host, slice.requester) }
                // Each host with the addresses it has now, still watched: a resolution that came since the pass
                // began (the names are resolved again beside it) is the one judged, never the older one.
                let (current, hosts) = state.withLock { state in
                    (state.changes, slice.hosts.compactMap { host in
                        state.entries[key(host)].flatMap { $0.watchers > 0 ? $0.resolution.map { (host, $0) } : nil }
                    })
                }
                guard current == change else {
                    cutShort = true
                    break
                }
                let published = evaluate(hosts, requester: slice.requester, known: &known).changed
                if !published.isEmpty { publish(published, requester: slice.requester) }
                judged += hosts.count
                changed += published.count
            }
            let took = ContinuousClock.now - started
            guard !cutShort else {
                logger.debug("re-judging cut short by a newer change", metadata: ["judged": "\(judged)", "took": "\(took)"])
                continue
            }
            state.withLock { $0.rejudged }?(took)
            logger.debug("re-judged watched hosts", metadata: ["hosts": "\(judged)", "changed": "\(changed)", "took": "\(took)"])
        }
    }

    /// The next pass's change and the hosts each requester watches (ordered into slices outside the lock), or nil
    /// (and no pass runs any more) when the last pass was made for the latest change.
    private func nextPass() -> (UInt64, [ResolutionRequester: [String: Int]])? {
        state.withLock { state in
            guard state.rejudgedChange != state.changes, !state.watchedBy.isEmpty else {
                state.rejudging = false
                return nil
            }
            state.rejudgedChange = state.changes
            return (state.changes, state.watchedBy)
        }
    }
}
