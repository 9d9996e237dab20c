#if canImport(Glibc)
import Glibc
#endif

/// One event read from an inotify descriptor.
package struct InotifyEvent: Sendable, Equatable {
    package var watch: Int32
    package var mask: UInt32
    /// The name within the watched directory (empty for an event of the watched object itself).
    package var name: [UInt8]

    /// Whether any of `flags` (`IN_…`) is set.
    package func has(_ flags: Int32) -> Bool { mask & UInt32(flags) != 0 }
}

/// Reads what an inotify descriptor holds, for the followers of files (networkd's state, resolv.conf).
package enum InotifyEvents {
    /// Every pending event of the non-blocking descriptor `fd`, read until it has no more.
    package static func drain(_ fd: Int32) -> [InotifyEvent] {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var events: [InotifyEvent] = []
        while true {
            let n = buffer.withUnsafeMutableBytes { space in try? SystemCall.retrying("read") { read(fd, space.baseAddress, space.count) } }
            guard let n, n > 0 else { return events }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= n {
                let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let nameEnd = min(n, nameStart + Int(event.len))
                events.append(InotifyEvent(watch: event.wd, mask: event.mask, name: Array(buffer[nameStart..<nameEnd].prefix { $0 != 0 })))
                offset = nameEnd
            }
        }
    }
}

extension InotifyEvents {
    /// A non-blocking, close-on-exec inotify descriptor and a poll thread to follow it on (the descriptor is
    /// closed again when the thread cannot be made).
    package static func descriptorAndThread() throws(SystemCallError) -> (inotify: Int32, thread: PollThread) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw SystemCallError(call: "inotify_init1", errno: .current) }
        do {
            return (fd, try PollThread())
        } catch {
            close(fd)
            throw error
        }
    }
}

extension PollThread {
    /// Starts the thread waiting on the inotify descriptor `fd` alone, with no time limit; `drain` runs on the
    /// thread whenever it has events.
    package func followInotify(_ fd: Int32, drain: @escaping () -> Void) throws(SystemCallError) {
        try start(
            descriptors: { ([pollfd(fd: fd, events: Int16(POLLIN), revents: 0)], -1) },
            ready: { outcome in
                if case .ready(let fds) = outcome, fds.first?.revents ?? 0 != 0 { drain() }
            }
        )
    }
}
