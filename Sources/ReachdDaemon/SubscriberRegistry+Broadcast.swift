import NIOCore

extension SubscriberRegistry {
    /// What `broadcast` leaves to the loop.
    struct LoopWork {
        /// Subscribers over the high-water mark, already out of the table: to be closed.
        var dropped: [Subscriber] = []
        /// Lines to write: per subscriber, the batch's events it is due (indices), of whose first the first `sent`
        /// bytes are written already.
        var writes: [(subscriber: Subscriber, due: [Int], sent: Int)] = []

        var isEmpty: Bool { dropped.isEmpty && writes.isEmpty }
    }

    /// Writes a batch of events (one network change) to every subscriber, each only the events of its targets
    /// that it has not been given. A subscriber whose queue is over the high-water mark when the batch comes is
    /// dropped; otherwise it gets the whole batch, so a client bounded by the mark plus one batch of its own
    /// targets is never dropped for watching many hosts. On the loop, all of it is written at once; on another
    /// thread (the publisher's), what sockets with a descriptor of the registry's own take at once, and the rest is
    /// handed to the loop.
    func broadcast(_ events: [Event]) {
        guard !events.isEmpty else { return }
        let onLoop = eventLoop.inEventLoop
        let work = table.withLock { table in Self.writeDirectly(events, onLoop: onLoop, table: &table) }
        guard !work.isEmpty else { return }
        if onLoop {
            finish(work, of: events)
        } else {
            eventLoop.execute { self.finish(work, of: events) }
        }
    }

    /// With the table held: records each subscriber's due events as given, and writes them to its socket where
    /// that is allowed (nothing of it waits in its channel's queue or for the loop) and possible (a descriptor
    /// this thread may write); returns the rest, and the subscribers to drop, taken out of the table.
    private static func writeDirectly(_ events: [Event], onLoop: Bool, table: inout Table) -> LoopWork {
        var work = LoopWork()
        // The indices of the events one subscriber is due, reused from one subscriber to the next.
        var due: [Int] = []
        due.reserveCapacity(events.count)
        var position = 0
        while position < table.subscribers.count {
            let subscriber = table.subscribers[position]
            position += 1
            due.removeAll(keepingCapacity: true)
            for index in events.indices where subscriber.sequences[events[index].key].map({ $0 < events[index].sequence }) ?? false {
                due.append(index)
            }
            guard !due.isEmpty else { continue }
            // Only a queue with bytes in it can be over the mark.
            if subscriber.mayHaveQueued, !subscriber.channel.isWritable {
                _ = take(ObjectIdentifier(subscriber.channel), from: &table)
                position -= 1 // the last subscriber moved into this place
                work.dropped.append(subscriber)
                continue
            }
            for index in due { subscriber.sequences[events[index].key] = events[index].sequence }
            let descriptor = onLoop ? (subscriber.channel.isActive ? subscriber.loopDescriptor : nil) : subscriber.ownDescriptor
            guard let descriptor, !subscriber.mayHaveQueued, subscriber.handedToLoop == 0 else {
                subscriber.handedToLoop += 1
                work.writes.append((subscriber, due, 0))
                continue
            }
            let (whole, sent) = send(due, of: events, to: descriptor)
            guard whole < due.count else { continue }
            subscriber.handedToLoop += 1
            work.writes.append((subscriber, Array(due[whole...]), sent))
        }
        return work
    }

    /// Sends the lines of `due` in order, the first from byte `skipping` on, while the socket takes them whole:
    /// returns how many it took whole, and how many bytes of the next one (counted from its start).
    private static func send(_ due: [Int], of events: [Event], to descriptor: Int32, skipping: Int = 0) -> (whole: Int, sent: Int) {
        var skip = skipping
        for (done, index) in due.enumerated() {
            let line = events[index].line
            let sent = line.withUnsafeBytes { SubscriberSocket.send(descriptor, UnsafeRawBufferPointer(rebasing: $0[skip...])) }
            guard sent == line.count - skip else { return (done, skip + sent) }
            skip = 0
        }
        return (due.count, 0)
    }

    /// On the loop: writes what `broadcast` left, straight to a socket whose channel's queue is empty, else (and
    /// what the socket does not take) through the queue; then closes the subscribers that were dropped.
    private func finish(_ work: LoopWork, of events: [Event]) {
        eventLoop.preconditionInEventLoop()
        var queued = QueuedEvents(events)
        for item in work.writes {
            let subscriber = item.subscriber, channel = subscriber.channel
            let descriptor = table.withLock { table -> Int32?? in
                guard let position = table.positions[ObjectIdentifier(channel)], table.subscribers[position] === subscriber else { return nil }
                return .some(subscriber.loopDescriptor)
            }
            // Left the table meanwhile: its channel is closed or closing.
            guard let descriptor else { continue }
            let queueEmpty = channel.isActive && (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) == 0
            var whole = 0, sent = item.sent
            if queueEmpty, let descriptor {
                (whole, sent) = Self.send(item.due, of: events, to: descriptor, skipping: item.sent)
            }
            let throughChannel = whole < item.due.count
            if throughChannel {
                table.withLock { _ in subscriber.mayHaveQueued = true }
                var first = queued.buffer(item.due[whole])
                first.moveReaderIndex(forwardBy: sent)
                channel.write(first, promise: nil)
                for index in item.due[(whole + 1)...] { channel.write(queued.buffer(index), promise: nil) }
                channel.flush()
            }
            table.withLock { _ in
                subscriber.handedToLoop -= 1
                if queueEmpty, !throughChannel { subscriber.mayHaveQueued = false }
            }
        }
        guard !work.dropped.isEmpty else { return }
        counted(out: work.dropped.count)
        for subscriber in work.dropped {
            metrics?.clientDropped(reason: "events_unread")
            onDrop("\(subscriber.channel.remoteAddress.map { "\($0)" } ?? "client")")
            subscriber.channel.close(promise: nil)
        }
    }
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
