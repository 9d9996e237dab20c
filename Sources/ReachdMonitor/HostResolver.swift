import NIOPosix
import ReachdModel
import ReachdNetlink
import Synchronization

/// Runs `SystemResolver` (getaddrinfo) on a small thread pool, so the event loops never block on DNS, and
/// serves requesters in turn (`ResolutionQueues`): one user's names that never answer delay no other user's
/// lookups, nor the daemon's own. A name asked for while it is being resolved waits for that answer.
package final class HostResolver: Sendable {
    private struct State {
        var queues: ResolutionQueues
        /// Who waits for each pending name's answer.
        var waiters: [String: [CheckedContinuation<Resolution, Never>]] = [:]
        /// Pool threads taking lookups from the queues now.
        var workers = 0
        var stopped = false
    }

    private let pool: NIOThreadPool
    private let threads: Int
    private let state: Mutex<State>
    private let lookup: @Sendable (String) -> Resolution

    /// `threads` lookups run at once, at most `runningPerRequester` of them for one requester.
    package init(threads: Int = 4, runningPerRequester: Int = 2, lookup: @escaping @Sendable (String) -> Resolution = SystemResolver.resolve) {
        self.threads = max(1, threads)
        self.lookup = lookup
        state = Mutex(State(queues: ResolutionQueues(runningPerRequester: runningPerRequester)))
        pool = NIOThreadPool(numberOfThreads: self.threads)
        pool.start()
    }

    package func shutdown() async {
        let waiting = state.withLock { state in
            state.stopped = true
            defer { state.waiters = [:] }
            return state.waiters.values.flatMap { $0 }
        }
        for waiter in waiting { waiter.resume(returning: .failed("resolver stopped")) }
        try? await pool.shutdownGracefully()
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
            case true?: pool.submit { [self] _ in work() }
            case false?: break
            }
        }
    }

    /// One pool thread: takes lookups in turn until none may start now.
    private func work() {
        var finished: (name: String, resolution: Resolution)?
        while true {
            let (next, waiting) = state.withLock { state -> ((name: String, requester: ResolutionRequester)?, [CheckedContinuation<Resolution, Never>]) in
                var waiting: [CheckedContinuation<Resolution, Never>] = []
                if let finished {
                    state.queues.finished(finished.name)
                    waiting = state.waiters.removeValue(forKey: finished.name) ?? []
                }
                let next = state.stopped ? nil : state.queues.next()
                if next == nil { state.workers -= 1 }
                return (next, waiting)
            }
            if let finished { for waiter in waiting { waiter.resume(returning: finished.resolution) } }
            guard let next else { return }
            finished = (next.name, lookup(next.name))
        }
    }
}
