import NIOCore

extension SubscriberRegistry {
    /// Writes a batch of events (one network change) to every subscriber, each only the events of its targets
    /// that it has not been given. A subscriber whose queue is over the high-water mark when the batch comes is
    /// dropped; otherwise it gets the whole batch, so a client bounded by the mark plus one batch of its own
    /// targets is never dropped for watching many hosts. What a subscriber's socket takes at once is written
    /// here (off the loop, through the registry's own descriptor); the rest waits for the loop, which writes it
    /// at once where `flushHere` (the caller is on the loop and holds nothing: the loops' turn for many
    /// subscribers), else in a task of its own.
    func broadcast(_ events: [Event], flushHere: Bool = false) {
        guard !events.isEmpty else { return }
        let onLoop = eventLoop.inEventLoop
        let (planned, direct) = table.withLock { table in writeDirectly(events, onLoop: onLoop, table: &table) }
        metrics?.subscriberLinesWritten(direct: direct, queued: 0)
        if flushHere {
            eventLoop.preconditionInEventLoop()
            flushWaiting()
        } else if planned {
            eventLoop.execute { self.flushWaiting() }
        }
    }

    /// With the table held: records each subscriber's due events as given, and writes them to its socket where
    /// that is allowed (nothing of it waits in its channel's queue or for the loop) and possible (a descriptor this
    /// thread may write); the rest joins its pending lines. Subscribers to drop leave the table for `dropped`.
    /// Returns whether a flush task is to be planned (none was, and there is work for one), and the lines written whole.
    private func writeDirectly(_ events: [Event], onLoop: Bool, table: inout Table) -> (planned: Bool, direct: Int) {
        var queued = QueuedEvents(events)
        // The indices of the events one subscriber is due, reused from one subscriber to the next.
        var due: [Int] = []
        due.reserveCapacity(events.count)
        var position = 0, direct = 0
        while position < table.subscribers.count {
            let subscriber = table.subscribers[position]
            position += 1
            due.removeAll(keepingCapacity: true)
            for index in events.indices where subscriber.sequences[events[index].key].map({ $0 < events[index].sequence }) ?? false {
                due.append(index)
            }
            guard !due.isEmpty else { continue }
            guard subscriber.channel.isWritable else {
                _ = take(ObjectIdentifier(subscriber.channel), from: &table)
                position -= 1 // the last subscriber moved into this place
                table.dropped.append(subscriber)
                continue
            }
            for index in due { subscriber.sequences[events[index].key] = events[index].sequence }
            var whole = 0, sent = 0
            if !subscriber.loopOwes, !subscriber.mayHaveQueued,
               let descriptor = onLoop ? (subscriber.channel.isActive ? subscriber.loopDescriptor : nil) : subscriber.ownDescriptor {
                (whole, sent) = Self.send(due, of: events, to: descriptor)
                direct += whole
                if whole == due.count { continue }
            }
            var first = queued.buffer(due[whole])
            first.moveReaderIndex(forwardBy: sent)
            subscriber.pending.append(first)
            for index in due[(whole + 1)...] { subscriber.pending.append(queued.buffer(index)) }
            subscriber.loopOwes = true
            if !subscriber.isWaiting {
                subscriber.isWaiting = true
                table.waiting.append(subscriber)
            }
        }
        guard !table.flushPlanned, !table.waiting.isEmpty || !table.dropped.isEmpty else { return (false, direct) }
        table.flushPlanned = true
        return (true, direct)
    }

    /// Sends the lines of `due` in order while the socket takes them whole: returns how many it took whole, and
    /// how many bytes of the next one.
    private static func send(_ due: [Int], of events: [Event], to descriptor: Int32) -> (whole: Int, sent: Int) {
        for (done, index) in due.enumerated() {
            let line = events[index].line
            let sent = line.withUnsafeBytes { SubscriberSocket.send(descriptor, $0) }
            guard sent == line.count else { return (done, sent) }
        }
        return (due.count, 0)
    }

    /// On the loop: writes the waiting subscribers' pending lines, and closes the dropped subscribers.
    private func flushWaiting() {
        eventLoop.preconditionInEventLoop()
        let (waiting, dropped) = table.withLock { table in
            defer {
                table.waiting = []
                table.dropped = []
                table.flushPlanned = false
            }
            for subscriber in table.waiting { subscriber.isWaiting = false }
            return (table.waiting, table.dropped)
        }
        for subscriber in waiting { writePending(subscriber) }
        guard !dropped.isEmpty else { return }
        counted(out: dropped.count)
        for subscriber in dropped {
            metrics?.clientDropped(reason: "events_unread")
            onDrop("\(subscriber.channel.remoteAddress.map { "\($0)" } ?? "client")")
            subscriber.channel.close(promise: nil)
        }
    }

    /// On the loop: writes `subscriber`'s pending lines, then `reply` (through the channel): straight to the socket
    /// while the channel's queue is empty and the socket takes them, else through the queue. Nothing is written to
    /// it elsewhere meanwhile (`loopOwes`); afterwards, events go straight to it again once its queue is empty.
    func writePending(_ subscriber: Subscriber, then reply: () -> Void = {}) {
        let channel = subscriber.channel
        let taken = table.withLock { table -> (lines: [ByteBuffer], descriptor: Int32?)? in
            guard let position = table.positions[ObjectIdentifier(channel)], table.subscribers[position] === subscriber else { return nil }
            defer { subscriber.pending = [] }
            subscriber.loopOwes = true
            return (subscriber.pending, subscriber.loopDescriptor)
        }
        // Left the table meanwhile: its channel is closed or closing.
        guard let taken else { return reply() }
        var lines = taken.lines, next = 0
        if channel.isActive, let descriptor = taken.descriptor, (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) == 0 {
            while next < lines.count {
                let readable = lines[next].readableBytes
                let sent = lines[next].withUnsafeReadableBytes { SubscriberSocket.send(descriptor, $0) }
                guard sent == readable else {
                    lines[next].moveReaderIndex(forwardBy: sent)
                    break
                }
                next += 1
            }
        }
        if next < lines.count {
            for line in lines[next...] { channel.write(line, promise: nil) }
            channel.flush()
        }
        metrics?.subscriberLinesWritten(direct: next, queued: lines.count - next)
        reply()
        let queueEmpty = (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) == 0
        table.withLock { _ in
            subscriber.mayHaveQueued = !queueEmpty
            // Lines that came meanwhile wait for the flush they planned.
            if subscriber.pending.isEmpty { subscriber.loopOwes = false }
        }
    }
}

/// One `ByteBuffer` per event of a batch, made when a subscriber first needs one, then shared (copy-on-write) by
/// every subscriber's pending line and queued write.
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
