import Foundation
import NIOCore
import NIOPosix
import ReachdSystem

/// The file threads: every blocking call on a user's file runs on one. An idle thread takes the next call; when
/// none is idle a new one starts, up to `maximum`; a thread idle for `idleSeconds` ends. A call stuck in a file
/// system that stopped answering (a dead NFS server, a FUSE daemon that blocks) holds only its own thread, so other
/// jobs' calls go on: NIO's `NIOThreadPool` has a fixed number of threads, which a hung destination would all take.
final class FileThreads: @unchecked Sendable {
    /// A write that has not returned after this long makes its directory's file system count as not answering
    /// (`PartialFileWriter`): its job stops and waits, with the others of that directory, until the write returns.
    static let answerSeconds = 10.0

    /// Threads at most; past them, calls wait for one to come free.
    let maximum: Int
    private let idleSeconds: Double
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queue = CircularBuffer<Call>()
    private var idle = 0
    private var threads = 0
    private var stopped = false

    init(maximum: Int = 64, idleSeconds: Double = 30) {
        precondition(maximum > 0)
        self.maximum = maximum
        self.idleSeconds = idleSeconds
    }

    /// Threads running now (busy or idle), for the tests.
    var threadCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return threads
    }

    /// Runs `body` on a file thread; the future completes on `eventLoop`. Once stopped, fails at once.
    func run<T: Sendable>(on eventLoop: any EventLoop, _ body: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        let promise = eventLoop.makePromise(of: T.self)
        let work = Call(run: { promise.completeWith(Result { try body() }) }, fail: { promise.fail($0) })
        condition.lock()
        guard !stopped else {
            condition.unlock()
            promise.fail(NIOThreadPoolError.ThreadPoolInactive())
            return promise.futureResult
        }
        queue.append(work)
        let start = queue.count > idle && threads < maximum
        if start { threads += 1 }
        condition.signal()
        condition.unlock()
        if start { startThread() }
        return promise.futureResult
    }

    /// Runs `body` on a file thread and waits for it, even when the calling task is cancelled: a stopped transfer
    /// still writes what it received and removes or measures its files.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await run(on: MultiThreadedEventLoopGroup.singleton.any(), body).get()
    }

    /// No call starts from now on; those queued still run, and idle threads end.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    private func startThread() {
        do {
            try DetachedThread.start { [self] in work() }
        } catch {
            // No thread to be had (the unit's TasksMax=): the calls queued wait for a running thread, or fail when none
            // runs, never on the caller's thread (which a hung file system would then hold).
            condition.lock()
            threads -= 1
            var orphaned: [Call] = []
            while threads == 0, let call = queue.popFirst() { orphaned.append(call) }
            condition.unlock()
            for call in orphaned { call.fail(error) }
        }
    }

    /// A thread's life: calls while there are any, then waits up to `idleSeconds` for another.
    private func work() {
        condition.lock()
        while true {
            if let call = queue.popFirst() {
                condition.unlock()
                call.run()
                condition.lock()
                continue
            }
            if stopped { break }
            idle += 1
            let woken = condition.wait(until: Date(timeIntervalSinceNow: idleSeconds))
            idle -= 1
            if !woken, queue.isEmpty { break }
        }
        threads -= 1
        condition.unlock()
    }
}

/// A call queued for a file thread: run it, or fail it when no thread can take it.
private struct Call: Sendable {
    let run: @Sendable () -> Void
    let fail: @Sendable (any Error) -> Void
}
