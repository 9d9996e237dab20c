import NIOCore

/// Closes its connection once it has been idle (`IdleRule`) for the timeout. The protocol handler behind it
/// sends it `ConnectionUse` as user outbound events; everything else passes through untouched.
public final class ConnectionGuard: ChannelDuplexHandler {
    public typealias InboundIn = NIOAny
    public typealias OutboundIn = NIOAny

    private var rule = IdleRule()
    private let timeout: TimeAmount
    private let onIdle: @Sendable () -> Void
    private var timer: Scheduled<Void>?

    /// `onIdle` runs (on the event loop) just before an idle connection is closed.
    public init(timeout: TimeAmount, onIdle: @escaping @Sendable () -> Void = {}) {
        self.timeout = timeout
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
        let bound = context.loopBound
        let onIdle = self.onIdle
        timer = context.eventLoop.scheduleTask(in: timeout) {
            onIdle()
            bound.value.close(promise: nil)
        }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }
}
