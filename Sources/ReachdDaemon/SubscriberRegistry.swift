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
        var lastSequence: UInt64
    }

    init(eventLoop: any EventLoop, onDrop: @escaping @Sendable (String) -> Void) {
        self.eventLoop = eventLoop
        self.onDrop = onDrop
    }

    /// Adds a connection that has been sent the verdict with `sequence`.
    func add(_ channel: any Channel, sentSequence sequence: UInt64) {
        eventLoop.preconditionInEventLoop()
        subscribers[ObjectIdentifier(channel)] = Subscriber(channel: channel, lastSequence: sequence)
    }

    func remove(_ channel: any Channel) {
        eventLoop.preconditionInEventLoop()
        subscribers.removeValue(forKey: ObjectIdentifier(channel))
    }

    var count: Int {
        eventLoop.preconditionInEventLoop()
        return subscribers.count
    }

    /// Writes one encoded event line to every subscriber that has not seen `sequence` yet.
    func broadcast(_ line: [UInt8], sequence: UInt64) {
        eventLoop.preconditionInEventLoop()
        guard !subscribers.isEmpty else { return }
        let buffer = ByteBuffer(bytes: line)
        var dropped: [ObjectIdentifier] = []
        for (key, subscriber) in subscribers where subscriber.lastSequence < sequence {
            guard subscriber.channel.isWritable else {
                dropped.append(key)
                continue
            }
            subscribers[key]?.lastSequence = sequence
            subscriber.channel.writeAndFlush(buffer, promise: nil)
        }
        for key in dropped {
            guard let subscriber = subscribers.removeValue(forKey: key) else { continue }
            onDrop("\(subscriber.channel.remoteAddress.map { "\($0)" } ?? "client")")
            subscriber.channel.close(promise: nil)
        }
    }
}
