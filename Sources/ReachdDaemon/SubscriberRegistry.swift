import NIOCore
import ReachdModel
import Synchronization

/// The subscribed connections of one event loop.
///
/// An event is encoded once and written to every subscriber: straight to its socket while nothing of it waits in
/// the channel's queue, else (and for what the socket does not take) through the channel's queue, so each
/// subscriber gets its lines in order. A batch for few subscribers is written by the thread that published it
/// (`broadcast` off the loop): to a socket through a descriptor of the registry's own (`dup`, for up to
/// `SubscriberTally.ownDescriptorsAtMost` subscribers of all loops), as NIO may close its own on its loop at any
/// time, so that a change reaches these subscribers without waking an event loop. Whatever cannot be written so
/// waits in the subscriber's own line of `pending` lines, which only its loop writes, in order, before anything
/// else for it (a later event, a reply). A subscriber whose queue is over the high-water mark (it does not read)
/// is closed, so it never holds back the others.
///
/// The table and each subscriber's fields are touched only with `table` held; a subscriber's channel only on the
/// loop, never with `table` held (a write may close the channel, which removes it).
final class SubscriberRegistry: @unchecked Sendable {
    let eventLoop: any EventLoop
    let table = Mutex(Table())
    let onDrop: @Sendable (String) -> Void
    let metrics: DaemonMetrics?
    /// The subscribers of every loop, this one's among them.
    let tally: SubscriberTally

    /// The subscribers, in the order they subscribed (a removal moves the last one into the gap).
    struct Table {
        var subscribers: [Subscriber] = []
        /// Where each connection's subscriber is in `subscribers`.
        var positions: [ObjectIdentifier: Int] = [:]
        /// Subscribers with pending lines for the loop to write, each once, in the order they first got them.
        var waiting: [Subscriber] = []
        /// Subscribers over the high-water mark, out of the table already, for the loop to close.
        var dropped: [Subscriber] = []
        /// A task that writes the waiting subscribers' lines and closes the dropped ones is on the loop's queue.
        var flushPlanned = false
    }

    /// A class, so that updating its sequences while iterating the registry copies nothing. Sendable by the
    /// table's rule: its fields are touched only with the table held.
    final class Subscriber: @unchecked Sendable {
        let channel: any Channel
        /// Per target key (`internetKey`, `key(forHost:uid:)`), the last sequence the client has been given.
        var sequences: [String: UInt64] = [:]
        /// The socket's descriptor as reachd accepted it, which NIO now owns: written only on the loop, while the
        /// channel is active (NIO closes it on the loop, and the registry hears of that there).
        var loopDescriptor: Int32?
        /// The registry's own descriptor of the socket, which any thread holding the table may write; closed
        /// when the subscriber leaves the table.
        var ownDescriptor: Int32?
        /// Bytes may wait in the channel's queue (written through the channel since it was last seen empty):
        /// nothing is written directly before the loop has looked.
        var mayHaveQueued = true
        /// Lines for the loop to write before anything else for this subscriber: each the batch's buffer for its
        /// event (shared by every subscriber it waits for), the first's reader index past what was sent already.
        var pending: [ByteBuffer] = []
        /// The loop has lines of it to write, or is writing to it: nothing is written to it elsewhere meanwhile.
        var loopOwes = false
        /// In the table's `waiting`.
        var isWaiting = false

        init(channel: any Channel) { self.channel = channel }
    }

    /// The registry key of the internet verdict.
    static let internetKey = "internet"

    /// The registry key of a host's verdict as the user `uid` watches it (each user's hosts are their own:
    /// `HostMonitor`), `host:UID:NAME`.
    static func key(forHost host: String, uid: UInt32) -> String {
        "host:\(uid):" + host
    }

    init(eventLoop: any EventLoop, metrics: DaemonMetrics? = nil, tally: SubscriberTally = SubscriberTally(),
         onDrop: @escaping @Sendable (String) -> Void) {
        self.eventLoop = eventLoop
        self.metrics = metrics
        self.tally = tally
        self.onDrop = onDrop
    }

    /// Subscribes a connection to `targets` (registry keys) whose verdicts, with these sequences, `reply` carries,
    /// and writes the reply: behind the lines it has pending, and before any event for it published from now on.
    /// `descriptor`: the connection's socket as reachd accepted it and handed it to NIO (`SocketAcceptor`), which
    /// events may be written to directly; nil: through the channel's queue only.
    func add(_ channel: any Channel, descriptor: Int32? = nil, targets: [(key: String, sequence: UInt64)], reply: ByteBuffer) {
        eventLoop.preconditionInEventLoop()
        let id = ObjectIdentifier(channel)
        let (subscriber, isNew) = table.withLock { table -> (Subscriber, Bool) in
            let subscriber: Subscriber, isNew: Bool
            if let position = table.positions[id] {
                (subscriber, isNew) = (table.subscribers[position], false)
            } else {
                (subscriber, isNew) = (Subscriber(channel: channel), true)
                table.positions[id] = table.subscribers.count
                table.subscribers.append(subscriber)
                if let descriptor, channel.isActive {
                    subscriber.loopDescriptor = descriptor
                    if tally.reserveOwnDescriptor() {
                        subscriber.ownDescriptor = SubscriberSocket.duplicate(descriptor)
                        if subscriber.ownDescriptor == nil { tally.releaseOwnDescriptor() }
                    }
                }
            }
            for target in targets {
                subscriber.sequences[target.key] = max(subscriber.sequences[target.key] ?? 0, target.sequence)
            }
            subscriber.pending.append(reply)
            subscriber.loopOwes = true
            return (subscriber, isNew)
        }
        if isNew {
            metrics?.subscribers.add(1, ordering: .relaxed)
            tally.count.add(1, ordering: .relaxed)
        }
        writePending(subscriber)
    }

    /// Writes a reply to `channel` through its pipeline (`write`), behind the lines a subscriber has pending: events
    /// for it wait for the loop until nothing of the reply is left in the channel's queue.
    func writeThroughChannel(_ channel: any Channel, _ write: () -> Void) {
        eventLoop.preconditionInEventLoop()
        let id = ObjectIdentifier(channel)
        guard let subscriber = table.withLock({ table in table.positions[id].map { table.subscribers[$0] } }) else { return write() }
        writePending(subscriber, then: write)
    }

    /// Whether events go straight to `channel`'s socket while its queue is empty: from the loop, and from the
    /// publisher's thread (tests).
    func writesDirectly(to channel: any Channel) -> (fromLoop: Bool, fromPublisher: Bool) {
        table.withLock { table in
            guard let position = table.positions[ObjectIdentifier(channel)] else { return (false, false) }
            let subscriber = table.subscribers[position]
            return (subscriber.loopDescriptor != nil, subscriber.ownDescriptor != nil)
        }
    }

    func remove(_ channel: any Channel) {
        eventLoop.preconditionInEventLoop()
        guard table.withLock({ take(ObjectIdentifier(channel), from: &$0) }) != nil else { return }
        counted(out: 1)
    }

    /// Removes a connection's subscriber, moving the last one into its place, and closes its own descriptor.
    func take(_ id: ObjectIdentifier, from table: inout Table) -> Subscriber? {
        guard let position = table.positions.removeValue(forKey: id) else { return nil }
        let last = table.subscribers.removeLast()
        let taken: Subscriber
        if position < table.subscribers.count {
            taken = table.subscribers[position]
            table.subscribers[position] = last
            table.positions[ObjectIdentifier(last.channel)] = position
        } else {
            taken = last
        }
        if let own = taken.ownDescriptor {
            SubscriberSocket.close(own)
            taken.ownDescriptor = nil
            tally.releaseOwnDescriptor()
        }
        return taken
    }

    /// On the loop: `count` subscribers left (their connections' closing hands back their memory:
    /// `MemoryAfterDepartures`).
    func counted(out count: Int) {
        metrics?.subscribers.subtract(count, ordering: .relaxed)
        tally.count.subtract(count, ordering: .relaxed)
    }

    var count: Int {
        table.withLock { $0.subscribers.count }
    }

    /// One encoded event for the subscribers of `key`.
    struct Event {
        let line: [UInt8]
        let key: String
        let sequence: UInt64
    }

    /// From how many subscribers (of all loops) a batch is handed to the loops in turn (`inTurn`) rather than
    /// written by the thread that published it. A batch for many reaches the loops in turn, so its writers take one
    /// core and the subscribers have the others to read on: on 2 cores, both loops writing one change to 10,000 at
    /// once held their readers back (bench/run's fan-out). A batch for few needs no loop: a hop to one would be
    /// most of its latency. Where the choice changes between two batches, a subscriber may be handed them out of
    /// order, and `broadcast` sends no event older than one it has had.
    static let inTurnFrom = 512

    /// Runs `step` on each loop of `loops` in turn, from `index`: the next starts when the one before has
    /// finished, and each loop takes the batches in the order they came.
    static func inTurn(_ loops: [any EventLoop], from index: Int = 0, _ step: @escaping @Sendable (Int) -> Void) {
        guard index < loops.count else { return }
        loops[index].execute {
            step(index)
            inTurn(loops, from: index + 1, step)
        }
    }
}

/// How many subscribers the registries of every loop hold together (a figure any thread may read), and how many
/// descriptors of their own.
final class SubscriberTally: Sendable {
    let count = Atomic<Int>(0)
    private let ownDescriptors = Atomic<Int>(0)
    /// Descriptors of the registries' own, at most: each is one more open file, and the daemon's connections may
    /// take most of its limit (LimitNOFILE=4096 beside 2,176 connections).
    static let ownDescriptorsAtMost = 128

    /// Counts one more descriptor of a registry's own, if the limit allows it.
    func reserveOwnDescriptor() -> Bool {
        var current = ownDescriptors.load(ordering: .relaxed)
        while current < Self.ownDescriptorsAtMost {
            let (exchanged, seen) = ownDescriptors.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = seen
        }
        return false
    }

    func releaseOwnDescriptor() {
        ownDescriptors.subtract(1, ordering: .relaxed)
    }
}
