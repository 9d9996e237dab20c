import NIOCore

/// Where a `ConnectionGuard` keeps its idle deadline.
public protocol ConnectionTimers: Sendable {
    /// Runs `body` on `loop` once `delay` has passed, unless the returned function is called first. A body
    /// already on its way to the loop may still run: it checks that it is still wanted.
    func schedule(in delay: TimeAmount, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> @Sendable () -> Void
}

/// NIO's own timers. A task cancelled still wakes the loop once at its deadline (the loop's timerfd stays
/// armed), so the daemons keep connection deadlines in `OffLoopTimers`; this is its fallback, and drives
/// the guard by an embedded loop's clock in tests.
public struct EventLoopTimers: ConnectionTimers {
    public init() {}

    public func schedule(in delay: TimeAmount, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        let task = loop.scheduleTask(in: delay, body)
        return { task.cancel() }
    }
}
