import CReachdMemory
import NIOCore
import ReachdModel
import Synchronization

/// The subscribed connections of one event loop; touched only on that loop.
///
/// An event is encoded once and written to every subscriber: straight to its socket (`SubscriberSocket`)
/// while nothing of it waits in the channel's queue, else (and for what the socket does not take) through the
/// channel's queue, so each subscriber gets its lines in order. A subscriber whose queue is over the
/// high-water mark (it does not read) is closed, so it never holds back the others.
final class SubscriberRegistry: @unchecked Sendable {
    let eventLoop: any EventLoop
    /// In the order they subscribed (a removal moves the last one into the gap), walked by `broadcast`:
    /// contiguous, and near the order their connections were allocated in.
    private var subscribers: [Subscriber] = []
    /// Where each connection's subscriber is in `subscribers`.
    private var positions: [ObjectIdentifier: Int] = [:]
    private let onDrop: @Sendable (String) -> Void
    private let metrics: DaemonMetrics?
    /// The subscribers of every loop, this one's among them.
    private let tally: SubscriberTally
    /// A return of freed memory to the kernel is planned (see `releaseMemorySoon`).
    private var releasePlanned = false

    /// A class, so that updating its sequences while iterating the registry copies nothing.
    private final class Subscriber {
        let channel: any Channel
        /// Per target key (`SubscriberRegistry.key(forHost:)`), the last sequence the client has seen.
        var sequences: [String: UInt64] = [:]
        /// The socket's descriptor, where events may be written to it directly.
        var descriptor: Int32?
        /// Bytes may wait in the channel's queue (written through the channel since it was last seen empty):
        /// nothing is written directly before they are gone.
        var mayHaveQueued = true

        init(channel: any Channel) { self.channel = channel }

        /// Nothing of this subscriber's waits in its channel's queue (asked of the channel only after a write
        /// through it).
        func queueIsEmpty() -> Bool {
            guard mayHaveQueued else { return true }
            guard let queued = try? channel.syncOptions?.getOption(.bufferedWritableBytes), queued == 0 else { return false }
            mayHaveQueued = false
            return true
        }
    }

    /// The registry key of a verdict's target: `internet`, or `host:NAME`.
    static func key(forHost host: String?) -> String {
        host.map { "host:" + $0 } ?? "internet"
    }

    init(eventLoop: any EventLoop, metrics: DaemonMetrics? = nil, tally: SubscriberTally = SubscriberTally(),
         onDrop: @escaping @Sendable (String) -> Void) {
        self.eventLoop = eventLoop
        self.metrics = metrics
        self.tally = tally
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
            tally.count.add(1, ordering: .relaxed)
            subscriber = Subscriber(channel: channel)
            positions[id] = subscribers.count
            subscribers.append(subscriber)
            SubscriberSocket.descriptor(of: channel) { subscriber.descriptor = $0 }
        }
        subscriber.sequences[key] = max(subscriber.sequences[key] ?? 0, sequence)
    }

    /// Something was written to `channel` through its pipeline (a reply): it may wait in the channel's queue.
    func wroteThroughChannel(_ channel: any Channel) {
        eventLoop.preconditionInEventLoop()
        guard let position = positions[ObjectIdentifier(channel)] else { return }
        subscribers[position].mayHaveQueued = true
    }

    /// Whether events go straight to `channel`'s socket while its queue is empty (tests).
    func writesDirectly(to channel: any Channel) -> Bool {
        positions[ObjectIdentifier(channel)].map { subscribers[$0].descriptor != nil } ?? false
    }

    func remove(_ channel: any Channel) {
        eventLoop.preconditionInEventLoop()
        if take(ObjectIdentifier(channel)) != nil {
            metrics?.subscribers.subtract(1, ordering: .relaxed)
            tally.count.subtract(1, ordering: .relaxed)
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

    /// From how many subscribers (of all loops) a batch is handed to the loops in turn rather than at once.
    static let inTurnFrom = 512

    /// Runs `step` for each loop of `loops` (by its index), on that loop: at once on every loop while the loops have
    /// fewer than `inTurnFrom` subscribers, else one loop at a time (the next starts when the one before has
    /// finished). A batch for many reaches the loops in turn, so its writers take one core and the subscribers
    /// have the others to read on: on 2 cores, both loops writing one change to 10,000 at once held their readers
    /// back (bench/run's fan-out). A batch for few goes to every loop at once: a hop from one loop to the next
    /// would be most of its latency. Each loop takes the batches in the order they came (the loop before passes
    /// them on in that order); where the choice changes between two batches, a loop may take them out of order,
    /// and `broadcast` sends no event older than one a subscriber has had.
    static func handOut(to loops: [any EventLoop], subscribers: Int, _ step: @escaping @Sendable (Int) -> Void) {
        if subscribers >= inTurnFrom {
            inTurn(loops, step)
        } else {
            for (index, loop) in loops.enumerated() { loop.execute { step(index) } }
        }
    }

    /// Runs `step` on each loop of `loops` in turn, from `index`.
    static func inTurn(_ loops: [any EventLoop], from index: Int = 0, _ step: @escaping @Sendable (Int) -> Void) {
        guard index < loops.count else { return }
        loops[index].execute {
            step(index)
            inTurn(loops, from: index + 1, step)
        }
    }

    /// Writes a batch of events (one network change) to every subscriber, each only the events of its
    /// targets that it has not seen. A subscriber whose queue is over the high-water mark when the batch
    /// comes is dropped; otherwise it gets the whole batch, so a client bounded by the mark plus one batch
    /// of its own targets is never dropped for watching many hosts.
    func broadcast(_ events: [Event]) {
        eventLoop.preconditionInEventLoop()
        guard !subscribers.isEmpty, !events.isEmpty else { return }
        var dropped: [ObjectIdentifier] = []
        // The indices of the events one subscriber is due, reused from one subscriber to the next.
        var due: [Int] = []
        due.reserveCapacity(events.count)
        var queued = QueuedEvents(events)
        for subscriber in subscribers {
            due.removeAll(keepingCapacity: true)
            for index in events.indices where subscriber.sequences[events[index].key].map({ $0 < events[index].sequence }) ?? false {
                due.append(index)
            }
            guard !due.isEmpty else { continue }
            guard subscriber.channel.isWritable else {
                dropped.append(ObjectIdentifier(subscriber.channel))
                continue
            }
            for index in due { subscriber.sequences[events[index].key] = events[index].sequence }
            write(due, of: events, to: subscriber, queued: &queued)
        }
        for id in dropped {
            guard let subscriber = take(id) else { continue }
            metrics?.subscribers.subtract(1, ordering: .relaxed)
            tally.count.subtract(1, ordering: .relaxed)
            metrics?.clientDropped(reason: "events_unread")
            releaseMemorySoon()
            onDrop("\(subscriber.channel.remoteAddress.map { "\($0)" } ?? "client")")
            subscriber.channel.close(promise: nil)
        }
    }

    /// Writes the events at `due` (in order) to `subscriber`: straight to its socket while its queue is empty
    /// and the socket takes them whole; the rest (from a partly written line on) through the channel's queue.
    private func write(_ due: [Int], of events: [Event], to subscriber: Subscriber, queued: inout QueuedEvents) {
        var next = 0
        if let fd = subscriber.descriptor, subscriber.channel.isActive, subscriber.queueIsEmpty() {
            while next < due.count {
                let line = events[due[next]].line
                let sent = line.withUnsafeBytes { SubscriberSocket.send(fd, $0) }
                guard sent == line.count else {
                    var rest = queued.buffer(due[next])
                    rest.moveReaderIndex(forwardBy: sent)
                    subscriber.mayHaveQueued = true
                    subscriber.channel.write(rest, promise: nil)
                    next += 1
                    break
                }
                next += 1
            }
            guard subscriber.mayHaveQueued else { return }
        }
        subscriber.mayHaveQueued = true
        for index in due[next...] { subscriber.channel.write(queued.buffer(index), promise: nil) }
        subscriber.channel.flush()
    }
}

/// How many subscribers the registries of every loop hold together (a figure any thread may read).
final class SubscriberTally: Sendable {
    let count = Atomic<Int>(0)
}

/// One `ByteBuffer` per event of a batch, made when a subscriber first needs its queue, then shared
/// (copy-on-write) by every queued write.
private struct QueuedEvents {
    private let events: [SubscriberRegistry.Event]
    private var buffers: [ByteBuffer?]

    init(_ events: [SubscriberRegistry.Event]) {
        self.events = events
        buffers = Array(repeating: nil, count: events.count)
    }

    mutating func buffer(_ index: Int) -> ByteBuffer {
        if let buffer = buffers[index] { return buffer }
        let buffer = ByteBuffer(bytes: events[index].line)
        buffers[index] = buffer
        return buffer
    }
}
