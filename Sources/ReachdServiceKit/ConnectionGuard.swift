import NIOCore

/// Closes its connection once it has been idle (`IdleRule`) for the timeout. The protocol handler behind it
/// sends it `ConnectionUse` as user outbound events; everything else passes through untouched. The idle
/// deadline lives in `timers` (`OffLoopTimers`: a connection that closes leaves nothing to wake up for).
public final class ConnectionGuard: ChannelDuplexHandler {
    public typealias InboundIn = NIOAny
    public typealias OutboundIn = NIOAny

    private var rule = IdleRule()
    private let timeout: TimeAmount
    private let timers: any ConnectionTimers
    private let onIdle: @Sendable () -> Void
    private var cancelTimer: (@Sendable () -> Void)?
    /// Counts the timers set: a timer's body that arrives after its timer was replaced does nothing.
    private var armings: UInt64 = 0

    /// `onIdle` runs (on the event loop) just before an idle connection is closed.
    public init(timeout: TimeAmount, timers: any ConnectionTimers = OffLoopTimers.shared,
                onIdle: @escaping @Sendable () -> Void = {}) {
        self.timeout = timeout
        self.timers = timers
        self.onIdle = onIdle
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    public func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    public func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let use = event as? ConnectionUse else { return context.triggerUserOutboundEvent(event, promise: promise) }
        if rule.note(use) { arm(context) } else { disarm() }
        promise?.succeed(())
    }

    private func arm(_ context: ChannelHandlerContext) {
        disarm()
        armings &+= 1
        let arming = armings
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        cancelTimer = timers.schedule(in: timeout, on: context.eventLoop) {
            let (connection, context) = bound.value
            guard connection.armings == arming, connection.cancelTimer != nil else { return }
            connection.cancelTimer = nil
            connection.onIdle()
            context.close(promise: nil)
        }
    }

    private func disarm() {
        cancelTimer?()
        cancelTimer = nil
    }
}
