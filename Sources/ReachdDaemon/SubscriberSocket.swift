import NIOCore
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// A subscriber's socket as `SubscriberRegistry` writes events to it: directly with `send` while nothing waits in
/// the channel's own queue, so that an event costs one system call per subscriber and none of NIO's write path.
/// NIO's descriptor is only written on the channel's loop, while the channel is active (NIO closes it and tells
/// the registry on that loop, in one step); other threads write a descriptor of the registry's own (`duplicate`),
/// which it closes itself, so that no thread ever writes a number NIO has closed and the system may have reused.
enum SubscriberSocket {
    /// The descriptor under `channel`, or nil where it cannot be proven (then the channel's queue is used).
    /// NIO does not expose it: its description names it (`fd=N`), and the socket's cookie (`SO_COOKIE`, unique
    /// per socket in the system) as read through the channel and through that descriptor proves it.
    /// `found` is called on the channel's loop, at once when the channel's socket option is answered at once;
    /// `missed`, with the reason, when a live channel's description names no descriptor or one of another socket
    /// (a NIO release that words its description otherwise), so that the lost fast path is said.
    static func descriptor(of channel: any Channel, found: @escaping (Int32) -> Void, missed: @escaping (String) -> Void = { _ in }) {
        guard let provider = channel as? any SocketOptionProvider else { return missed("the channel gives no socket options") }
        guard let fd = describedDescriptor(channel) else { return missed("NIO's channel description names no descriptor (fd=N)") }
        let cookie: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(level: .socket, name: .init(rawValue: socketCookie))
        cookie.assumeIsolated().whenSuccess { cookie in
            guard channel.isActive else { return }
            guard Self.cookie(of: fd) == cookie else { return missed("the descriptor NIO's description names is another socket") }
            found(fd)
        }
    }

    /// `SO_COOKIE` (asm-generic/socket.h), which Glibc's module does not name.
    static let socketCookie: Int32 = 57

    private static func describedDescriptor(_ channel: any Channel) -> Int32? {
        let text = "\(channel)"
        guard let marker = text.firstRange(of: "fd=") else { return nil }
        return Int32(text[marker.upperBound...].prefix(while: \.isNumber))
    }

    private static func cookie(of fd: Int32) -> UInt64? {
        var value: UInt64 = 0
        var length = socklen_t(MemoryLayout<UInt64>.size)
        guard getsockopt(fd, SOL_SOCKET, socketCookie, &value, &length) == 0, length == MemoryLayout<UInt64>.size else { return nil }
        return value
    }

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
