#if canImport(Glibc)
import Glibc
#endif

/// A plain POSIX thread that nobody joins, for work that must not block the concurrency pool (a blocking
/// `getaddrinfo`): its resources go back to the system when `body` returns.
package enum DetachedThread {
    /// Starts a thread running `body`.
    package static func start(_ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
        _ = try PosixThread.start(detached: true, body)
    }
}

/// `pthread_create` for a Swift closure: the one place that hands a closure to a new thread.
enum PosixThread {
    /// Starts a thread running `body`, detached or for its caller to join.
    static func start(detached: Bool, _ body: @escaping () -> Void) throws(SystemCallError) -> pthread_t {
        final class Box {
            let body: () -> Void
            init(_ body: @escaping () -> Void) { self.body = body }
        }
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        var tid = pthread_t()
        let rc = pthread_create(&tid, &attributes, { raw in
            guard let raw else { return nil }
            Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            throw SystemCallError(call: "pthread_create", errno: Errno(rc))
        }
        return tid
    }
}
