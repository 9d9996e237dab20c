import ReachdClient
import ReachdModel
import ReachdProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Makes changes (eth0's carrier through its veth peer, eth0's default route) and times what a daemon's
/// subscribers see of them.
struct Probe {
    let link: LinkFlapper
    let stamp: NetlinkStamp
    let watchedIndex: Int32

    /// `flaps` link flaps (two changes each), then `routeChanges` default route changes: the time from each
    /// change to the subscriber's event, and from the kernel's netlink message to the event.
    func measure(_ watcher: ReachdConnection, flaps: Int, routeChanges: Int, into latency: inout Latency) throws {
        var wired = try watcher.verdict(for: Request(op: .subscribe), timeout: 5).verdict.status == .wired
        for _ in 0..<(flaps * 2) {
            stamp.drain()
            let start = MonotonicClock.seconds()
            try link.set(up: !wired)
            wired.toggle()
            let (verdict, end) = try nextStampedEvent(watcher)
            let kernel = try stamp.arrival(of: .carrier(index: watchedIndex, up: wired))
            latency.total.append(end - start)
            latency.overNetlink.append(end - kernel)
            if (verdict.verdict.status == .wired) != wired { latency.wrong += 1 }
        }
        if !wired {
            try link.set(up: true)
            while try nextEvent(watcher).verdict.status != .wired {}
        }
        // eth0 up: deleting its default route (metric 100) leaves wwan0's; adding it back makes it wired again.
        for change in 0..<routeChanges {
            let add = change % 2 == 1
            stamp.drain()
            try link.setDefaultRoute(through: watchedIndex, present: add)
            let (verdict, end) = try nextStampedEvent(watcher)
            let kernel = try stamp.arrival(of: .defaultRoute(added: add))
            latency.routeOverNetlink.append(end - kernel)
            if (verdict.verdict.status == .wired) != add { latency.wrong += 1 }
        }
        if routeChanges % 2 == 1 {
            try link.setDefaultRoute(through: watchedIndex, present: true)
            while try nextEvent(watcher).verdict.status != .wired {}
        }
    }

    /// `rounds` changes, each timed until every one of `clients` (subscribed) has its event line, each beside
    /// one round of the floor program on as many connections, and one with the writer's connections watched.
    func fanOut(_ watcher: ReachdConnection, clients: [Int32], rounds: Int, program: String, into figures: inout FanOut) throws {
        var wired = try watcher.verdict(for: Request(op: .status), timeout: 5).verdict.status == .wired
        let reader = try SubscriberReader(program: program, fds: clients, rounds: rounds)
        for _ in 0..<rounds {
            let floor = try fanOutFloor(program, connections: clients.count)
            figures.floor.append(floor.seconds)
            figures.floorReader.append(floor.reader)
            figures.watchedFloor.append(try fanOutFloor(program, connections: clients.count, watched: true).seconds)
            let start = MonotonicClock.seconds()
            try link.set(up: !wired)
            wired.toggle()
            let round = try reader.awaitLine()
            figures.reachd.append(round.end - start)
            figures.reachdReader.append(round.reader)
            _ = try nextEvent(watcher)
        }
    }

    /// Brings eth0's carrier back if it is down; whether the verdict is wired.
    func restoreWired(_ watcher: ReachdConnection) throws -> Bool {
        guard try watcher.verdict(for: Request(op: .status), timeout: 5).verdict.status != .wired else { return true }
        try link.set(up: true)
        while try nextEvent(watcher).verdict.status != .wired {}
        return true
    }

    /// The next event, and the monotonic time its line was read (before it is decoded).
    func nextStampedEvent(_ connection: ReachdConnection) throws -> (StampedVerdict, Double) {
        while true {
            guard let line = try connection.nextLine(timeout: 10) else { throw BenchError("no event within 10 s") }
            let time = MonotonicClock.seconds()
            if case .event(let verdict) = try Reply.decode(line: line) { return (verdict, time) }
        }
    }

    func nextEvent(_ connection: ReachdConnection) throws -> StampedVerdict {
        try nextStampedEvent(connection).0
    }
}
