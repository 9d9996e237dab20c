import NIOCore
import ReachdModel

/// The subscribed connections of one event loop; touched only on that loop.
///
/// An event is encoded once and written to every subscriber. A subscriber whose outbound buffer is
/// over the high-water mark (it does not read) is closed, so it never holds back the others.
final class SubscriberRegistry: @unchecked Sendable {
    let eventLoop: any EventLoop
    private var subscribers: [ObjectIdentifier: Subscriber] = [:]
    private let onDrop: @Sendable (String) -> Void

    private struct Subscriber {
        let channel: any Channel
        /// Per target key (`SubscriberRegistry.key(for:)`), the last sequence the client has seen.
        var sequences: [String: UInt64]
    }

    /// The registry key of a verdict's target: `internet`, or `host:NAME`.
    static func key(forHost host: String?) -> String {
        host.map { "host:" + $0 } ?? "internet"
    }

    init(eventLoop: any EventLoop, onDrop: @escaping @Sendable (String) -> Void) {
        self.eventLoop = eventLoop
        self.onDrop = onDrop
    }

    /// Subscribes a connection to a target whose verdict with `sequence` it has been sent.
    func add(_ channel: any Channel, key: String, sentSequence sequence: UInt64) {
        eventLoop.preconditionInEventLoop()
        let id = ObjectIdentifier(channel)
        let known = subscribers[id]?.sequences[key] ?? 0
        subscribers[id, default: Subscriber(channel: channel, sequences: [:])].sequences[key] = max(known, sequence)
    }

    func remove(_ channel: any Channel) {
        eventLoop.preconditionInEventLoop()
        subscribers.removeValue(forKey: ObjectIdentifier(channel))
    }

    var count: Int {
        eventLoop.preconditionInEventLoop()
        return subscribers.count
    }

    /// Writes one encoded event line to every subscriber of `key` that has not seen `sequence` yet.
    func broadcast(_ line: [UInt8], key: String, sequence: UInt64) {
        eventLoop.preconditionInEventLoop()
        guard !subscribers.isEmpty else { return }
        let buffer = ByteBuffer(bytes: line)
        var dropped: [ObjectIdentifier] = []
        for (id, subscriber) in subscribers {
            guard let seen = subscriber.sequences[key], seen < sequence else { continue }
            guard subscriber.channel.isWritable else {
                dropped.append(id)
                continue
            }
            subscribers[id]?.sequences[key] = sequence
            subscriber.channel.writeAndFlush(buffer, promise: nil)
        }
        for id in dropped {
            guard let subscriber = subscribers.removeValue(forKey: id) else { continue }
            onDrop("\(subscriber.channel.remoteAddress.map { "\($0)" } ?? "client")")
            subscriber.channel.close(promise: nil)
        }
    }
}
