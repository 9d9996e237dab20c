import Logging
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// For a listening channel: when accepting fails for want of descriptors (EMFILE, ENFILE) or memory (ENOBUFS,
/// ENOMEM), stops accepting for `pause`, then tries again. SwiftNIO's `AcceptBackoffHandler` cannot stop the
/// loop in that case: after an accept that fails before any succeeded, the channel stays registered for
/// readability, and epoll reports the waiting connection again at once (a core spun at 100%). Turning `autoRead`
/// off unregisters it.
public final class AcceptPause: ChannelInboundHandler {
    public typealias InboundIn = NIOAny

    private let pause: TimeAmount
    private let onPause: @Sendable (Int32) -> Void
    private var resumption: Scheduled<Void>?

    /// `onPause` is told the errno each time accepting pauses (at most once per `pause`).
    public init(pause: TimeAmount = .seconds(1), onPause: @escaping @Sendable (Int32) -> Void = { _ in }) {
        self.pause = pause
        self.onPause = onPause
    }

    /// For a server channel initializer: adds a pause that logs each pause as a warning on `logger`.
    public static func install(on server: any Channel, logger: Logger) -> EventLoopFuture<Void> {
        server.eventLoop.makeCompletedFuture {
            try server.pipeline.syncOperations.addHandler(AcceptPause { code in
                logger.warning("cannot accept connections (\(String(cString: strerror(code)))): paused for 1 s")
            })
        }
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let failure = error as? IOError, [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(failure.errnoCode) else {
            return context.fireErrorCaught(error)
        }
        guard resumption == nil, let options = context.channel.syncOptions else { return }
        try? options.setOption(ChannelOptions.autoRead, value: false)
        onPause(failure.errnoCode)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let channel = NIOLoopBound(context.channel, eventLoop: context.eventLoop)
        resumption = context.eventLoop.scheduleTask(in: pause) {
            bound.value.resumption = nil
            try? channel.value.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        resumption?.cancel()
        resumption = nil
    }
}
