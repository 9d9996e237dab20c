#if canImport(Glibc)
import Glibc
#endif

/// Starts a plain POSIX thread running `body`; the caller joins it. reachd's long-lived loops (netlink,
/// D-Bus) use these rather than libdispatch, whose worker pool wakes the process every second.
/// Returns the errno of `pthread_create` on failure.
package func spawnPosixThread(_ body: @escaping () -> Void) -> Result<pthread_t, PosixThreadError> {
    final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    var tid = pthread_t()
    let rc = pthread_create(&tid, nil, { raw in
        guard let raw else { return nil }
        Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
        return nil
    }, context)
    guard rc == 0 else {
        Unmanaged<Box>.fromOpaque(context).release()
        return .failure(PosixThreadError(code: rc))
    }
    return .success(tid)
}

/// `pthread_create` failed with this errno.
package struct PosixThreadError: Error {
    package let code: Int32
}
