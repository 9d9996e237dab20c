import CReachdMemory
import NIOCore
import ReachdModel

/// The subscribed connections of one event loop; touched only on that loop.
///
/// An event is encoded once and written to every subscriber. A subscriber whose outbound buffer is
/// over the high-water mark (it does not read) is closed, so it never holds back the others.
final class SubscriberRegistry: @unchecked Sendable {
    let eventLoop: any EventLoop
    /// In the order they subscribed (a removal moves the last one into the gap), walked by `broadcast`:
    /// contiguous, and near the order their connections were allocated in.
    private var subscribers: [Subscriber] = []
    /// Where each connection's subscriber is in `subscribers`.
    private var positions: [ObjectIdentifier: Int] = [:]
    private let onDrop: @Sendable (String) -> Void
    private let metrics: DaemonMetrics?
    /// A return of freed memory to the kernel is planned (see `releaseMemorySoon`).
    private var releasePlanned = false

    /// A class, so that updating its sequences while iterating the registry copies nothing.
    private final class Subscriber {
        let channel: any Channel
        /// Per target key (`SubscriberRegistry.key(forHost:)`), the last sequence the client has seen.
        var sequences: [String: UInt64] = [:]

        init(channel: any Channel) { self.channel = channel }
    }

    /// The registry key of a verdict's target: `internet`, or `host:NAME`.
    static func key(forHost host: String?) -> String {
        host.map { "host:" + $0 } ?? "internet"
    }

    init(eventLoop: any EventLoop, metrics: DaemonMetrics? = nil, onDrop: @escaping @Sendable (String) -> Void) {
        self.eventLoop = eventLoop
        self.metrics = metrics
        self.onDrop = onDrop
    }

    /// Subscribes a connection to a target whose verdict with `sequence` it has been sent.
    func add(_ channel: any Channel, key: String, sentSequence sequence: UInt64) {
        eventLoop.preconditionInEventLoop()
        let id = ObjectIdentifier(channel)
        let subscriber: Subscriber
        if let position = positions[id] {
            subscriber = subscribers[position]
        } else {
            metrics?.subscribers.add(1, ordering: .relaxed)
            subscriber = Subscriber(channel: channel)
            positions[id] = subscribers.count
            subscribers.append(subscriber)
        }
        subscriber.sequences[key] = max(subscriber.sequences[key] ?? 0, sequence)
    }

    func remove(_ channel: any Channel) {
        eventLoop.preconditionInEventLoop()
        if take(ObjectIdentifier(channel)) != nil {
            metrics?.subscribers.subtract(1, ordering: .relaxed)
            releaseMemorySoon()
        }
    }

    /// Removes a connection's subscriber, moving the last one into its place.
    private func take(_ id: ObjectIdentifier) -> Subscriber? {
        guard let position = positions.removeValue(forKey: id) else { return nil }
        let last = subscribers.removeLast()
        guard position < subscribers.count else { return last }
        let taken = subscribers[position]
        subscribers[position] = last
        positions[ObjectIdentifier(last.channel)] = position
        return taken
    }

    /// A second after subscribers leave, hands the memory their queues held back to the kernel: glibc's
    /// malloc keeps freed blocks in its arenas, so a flood of clients that never read would leave the daemon
    /// large for good. One timer per burst of departures, none while nothing happens.
    private func releaseMemorySoon() {
        guard !releasePlanned else { return }
        releasePlanned = true
        eventLoop.scheduleTask(in: .seconds(1)) { [self] in
            releasePlanned = false
            _ = reachd_release_memory()
        }
    }

    var count: Int {
        eventLoop.preconditionInEventLoop()
        return subscribers.count
    }

    /// One encoded event for the subscribers of `key`.
    struct Event {
        let line: [UInt8]
        let key: String
        let sequence: UInt64
    }

    /// Writes a batch of events (one network change) to every subscriber, each only the events of its
    /// targets that it has not seen. A subscriber whose queue is over the high-water mark when the batch
    /// comes is dropped; otherwise it gets the whole batch, so a client bounded by the mark plus one batch
    /// of its own targets is never dropped for watching many hosts.
    func broadcast(_ events: [Event]) {
        eventLoop.preconditionInEventLoop()
        guard !subscribers.isEmpty, !events.isEmpty else { return }
        // One buffer per event, shared (copy-on-write) by every subscriber's write.
        let buffers = events.map { ByteBuffer(bytes: $0.line) }
        var dropped: [ObjectIdentifier] = []
        // The indices of the events one subscriber is due, reused from one subscriber to the next.
        var due: [Int] = []
        due.reserveCapacity(events.count)
        for subscriber in subscribers {
            due.removeAll(keepingCapacity: true)
            for index in events.indices where subscriber.sequences[events[index].key].map({ $0 < events[index].sequence }) ?? false {
                due.append(index)
            }
            guard let last = due.last else { continue }
            guard subscriber.channel.isWritable else {
                dropped.append(ObjectIdentifier(subscriber.channel))
                continue
            }
            for index in due {
                subscriber.sequences[events[index].key] = events[index].sequence
                if index == last {
                    subscriber.channel.writeAndFlush(buffers[index], promise: nil)
                } else {
                    subscriber.channel.write(buffers[index], promise: nil)
                }
            }
        }
        for id in dropped {
            guard let subscriber = take(id) else { continue }
            metrics?.subscribers.subtract(1, ordering: .relaxed)
            metrics?.clientDropped(reason: "events_unread")
            releaseMemorySoon()
            onDrop("\(subscriber.channel.remoteAddress.map { "\($0)" } ?? "client")")
            subscriber.channel.close(promise: nil)
        }
    }
}
