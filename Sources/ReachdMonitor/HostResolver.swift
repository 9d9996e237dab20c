import ReachdModel
import ReachdNetlink
import ReachdSystem
import Synchronization

/// Runs `SystemResolver` (getaddrinfo) on a few threads of its own (`DetachedThread`, started while there are
/// lookups to make), so the event loops and the concurrency pool never block on DNS, and
/// serves requesters in turn (`ResolutionQueues`): one user's names that never answer delay no other user's
/// lookups, nor the daemon's own. A name asked for while it is being resolved waits for that answer.
package final class HostResolver: Sendable {
    private struct State {
        var queues: ResolutionQueues
        /// Who waits for each pending name's answer.
        var waiters: [String: [CheckedContinuation<Resolution, Never>]] = [:]
        /// Threads taking lookups from the queues now.
        var workers = 0
        var stopped = false
        /// `shutdown`, waiting for the last thread to finish its lookup.
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    private let threads: Int
    private let state: Mutex<State>
    private let lookup: @Sendable (String) -> Resolution

    /// `threads` lookups run at once, at most `runningPerRequester` of them for one requester.
    package init(threads: Int = 4, runningPerRequester: Int = 2, lookup: @escaping @Sendable (String) -> Resolution = SystemResolver.resolve) {
        self.threads = max(1, threads)
        self.lookup = lookup
        state = Mutex(State(queues: ResolutionQueues(runningPerRequester: runningPerRequester)))
    }

    package func shutdown() async {
        let waiting = state.withLock { state in
            state.stopped = true
            defer { state.waiters = [:] }
            return state.waiters.values.flatMap { $0 }
        }
        for waiter in waiting { waiter.resume(returning: .failed("resolver stopped")) }
        // As a thread pool's graceful shutdown: the lookups under way end first.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                guard state.workers > 0 else { return true }
                state.drained.append(done)
                return false
            }
            if idle { done.resume() }
        }
    }

    /// Resolves `name` in `requester`'s turn.
    package func resolve(_ name: String, for requester: ResolutionRequester = .daemon) async -> Resolution {
        await withCheckedContinuation { continuation in
            let startWorker = state.withLock { state -> Bool? in
                guard !state.stopped else { return nil }
                state.waiters[name, default: []].append(continuation)
                state.queues.enqueue(name, for: requester)
                guard state.workers < threads else { return false }
                state.workers += 1
                return true
            }
            switch startWorker {
            case nil: continuation.resume(returning: .failed("resolver stopped"))
            case true?:
                do {
                    try DetachedThread.start { [self] in work() }
                } catch {
                    // No thread to be had: the lookups run here rather than never.
                    work()
                }
            case false?: break
            }
        }
    }

    /// One resolver thread: takes lookups in turn until none may start now.
    private func work() {
        var finished: (name: String, resolution: Resolution)?
        while true {
            let (next, waiting, drained) = state.withLock { state -> (
                (name: String, requester: ResolutionRequester)?, [CheckedContinuation<Resolution, Never>], [CheckedContinuation<Void, Never>]
            ) in
                var waiting: [CheckedContinuation<Resolution, Never>] = []
                var drained: [CheckedContinuation<Void, Never>] = []
                if let finished {
                    state.queues.finished(finished.name)
                    waiting = state.waiters.removeValue(forKey: finished.name) ?? []
                }
                let next = state.stopped ? nil : state.queues.next()
                if next == nil {
                    state.workers -= 1
                    if state.workers == 0 { swap(&drained, &state.drained) }
                }
                return (next, waiting, drained)
            }
            if let finished { for waiter in waiting { waiter.resume(returning: finished.resolution) } }
            for done in drained { done.resume() }
            guard let next else { return }
            finished = (next.name, lookup(next.name))
        }
    }
}
