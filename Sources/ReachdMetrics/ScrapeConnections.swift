import NIOCore
import ReachdServiceKit
import Synchronization

/// The metrics endpoint's open connections (`EvictingSlots`): a scraper that arrives when all are taken is served
/// in the place of the connection that has waited longest for a request. Each connection also has a
/// `ConnectionGuard`: closed when it sends no complete request within `idleTimeout`, after connecting or after
/// its last answer (so keep-alive connections do not linger).
final class ScrapeConnections: Sendable {
    static let capacity = 64
    static let idleTimeout = TimeAmount.seconds(10)

    private struct State {
        var slots = EvictingSlots<ObjectIdentifier>(capacity: ScrapeConnections.capacity)
        var channels: [ObjectIdentifier: any Channel] = [:]
    }

    private let state = Mutex(State())

    /// Takes `channel` in (closing the connection it replaces) or closes it; true when it is to be served.
    func admit(_ channel: any Channel) -> Bool {
        let id = ObjectIdentifier(channel)
        let (admission, evicted): (EvictingSlots<ObjectIdentifier>.Admission, (any Channel)?) = state.withLock { state in
            let admission = state.slots.admit(id, now: NIODeadline.now().uptimeNanoseconds)
            var evicted: (any Channel)?
            if case .admittedInPlaceOf(let old) = admission { evicted = state.channels.removeValue(forKey: old) }
            if admission != .refused { state.channels[id] = channel }
            return (admission, evicted)
        }
        evicted?.close(promise: nil)
        guard admission != .refused else {
            channel.close(promise: nil)
            return false
        }
        channel.closeFuture.whenComplete { _ in
            self.state.withLock { state in
                state.slots.remove(id)
                state.channels[id] = nil
            }
        }
        return true
    }

    func note(_ use: ConnectionUse, of channel: any Channel) {
        let id = ObjectIdentifier(channel)
        state.withLock { state in
            switch use {
            case .requestStarted: state.slots.startRequest(id)
            case .requestAnswered: state.slots.finishRequest(id, now: NIODeadline.now().uptimeNanoseconds)
            case .subscribed: break
            }
        }
    }
}

/// Passes the scrape handler's `ConnectionUse` events to `ScrapeConnections` on their way to the guard.
final class ScrapeSlotMarker: ChannelOutboundHandler, Sendable {
    typealias OutboundIn = NIOAny

    private let connections: ScrapeConnections

    init(connections: ScrapeConnections) { self.connections = connections }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if let use = event as? ConnectionUse { connections.note(use, of: context.channel) }
        context.triggerUserOutboundEvent(event, promise: promise)
    }
}
