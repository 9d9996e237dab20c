/// How many of one connection's requests may wait for their answers before the daemon stops reading its socket
/// (docs/limits.md, "Per connection"): when `limit` wait, the socket is not read (the kernel's buffer, then the
/// client, wait) until one is answered and no line read before is still held. The same rule for reachd (its host
/// requests) and reachd-transfers (every request); a pure count, the connection's handler carries it out.
package struct PendingRequests: Sendable, Equatable {
    package let limit: Int
    /// Requests started and not answered yet.
    package private(set) var waiting = 0
    /// The socket is not being read.
    package private(set) var readingPaused = false

    package init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Whether another request may start now.
    package var hasRoom: Bool { waiting < limit }

    /// One more request waits for its answer; true when the socket must stop being read now.
    package mutating func started() -> Bool {
        waiting += 1
        guard !hasRoom, !readingPaused else { return false }
        readingPaused = true
        return true
    }

    /// A request was answered.
    package mutating func answered() {
        waiting = max(0, waiting - 1)
    }

    /// True when the socket must be read again now: it is not being read, another request may start, and
    /// none of the `linesHeld` lines already read wait to be handled.
    package mutating func shouldResume(linesHeld: Int) -> Bool {
        guard readingPaused, hasRoom, linesHeld == 0 else { return false }
        readingPaused = false
        return true
    }
}
