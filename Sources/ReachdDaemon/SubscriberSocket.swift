import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// A subscriber's socket as `SubscriberRegistry` writes events to it: directly with `send` while nothing waits in
/// the channel's own queue, so that an event costs one system call per subscriber and none of NIO's write path.
/// The descriptor reachd accepted (`SocketAcceptor`) and handed to NIO is only written on the channel's loop, while
/// the channel is active (NIO closes it and tells the registry on that loop, in one step); other threads write a
/// descriptor of the registry's own (`duplicate`), which it closes itself, so that no thread ever writes a number
/// NIO has closed and the system may have reused.
enum SubscriberSocket {
    /// A descriptor of the registry's own for the socket behind `fd` (close-on-exec), or nil when none is left.
    static func duplicate(_ fd: Int32) -> Int32? {
        let own = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        return own >= 0 ? own : nil
    }

    /// Closes a descriptor of the registry's own (once: Linux releases it even when `close` is interrupted).
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Writes as much of `bytes` as the socket takes now; returns how many it took (0 when it is full or
    /// failed: the channel's queue then carries the rest, and NIO meets the failure and closes the channel).
    /// An interrupted `send` is made again; allocates nothing.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        (try? SystemCall.retrying("send") { Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }) ?? 0
    }
}
