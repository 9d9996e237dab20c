import NIOCore
import ReachdSystem
import Synchronization

/// Connection deadlines kept off the event loops, by one `PollThread` asleep until the earliest of them
/// (`DeadlineQueue`); a body due runs on its loop. A deadline taken back is gone: with none left, the
/// thread sleeps without a limit, so a closed connection wakes nothing later (NIO's cancelled timers do:
/// `EventLoopTimers`). Should the thread not start, NIO's timers stand in.
public final class OffLoopTimers: ConnectionTimers, @unchecked Sendable {
    /// The process's instance: its thread starts with the first connection guard.
    public static let shared = OffLoopTimers()

    private struct Due {
        let loop: any EventLoop
        let body: @Sendable () -> Void
    }

    private let queue = Mutex(DeadlineQueue<Due>())
    // Set in `init` only; nil when the thread could not be started.
    private var thread: PollThread?

    public init() {
        let thread = try? PollThread()
        self.thread = thread
        do {
            try thread?.start(
                descriptors: { [unowned self] in
                    ([], queue.withLock { $0.sleep(now: NIODeadline.now().uptimeNanoseconds) })
                },
                ready: { [unowned self] _ in
                    for due in queue.withLock({ $0.takeDue(now: NIODeadline.now().uptimeNanoseconds) }) {
                        due.loop.execute(due.body)
                    }
                }
            )
        } catch {
            self.thread = nil
        }
    }

    deinit { thread?.stop() }

    public func schedule(in delay: TimeAmount, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        guard let thread else { return EventLoopTimers().schedule(in: delay, on: loop, body) }
        let deadline = (NIODeadline.now() + delay).uptimeNanoseconds
        let (token, wake) = queue.withLock { $0.add(Due(loop: loop, body: body), at: deadline) }
        if wake { thread.wake() }
        return { [weak self] in self?.cancel(token) }
    }

    private func cancel(_ token: UInt64) {
        if queue.withLock({ $0.remove(token) }) { thread?.wake() }
    }
}
