import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A plain POSIX thread asleep in `poll(2)` on its owner's descriptors and a wake-up pipe. The long-lived
/// loops (netlink, D-Bus) use it rather than libdispatch, whose worker pool wakes the process every second.
///
/// Each round asks `descriptors` what to wait on (and how long, in ms; -1: no limit), polls, and hands the
/// result to `ready`, until `stop`. `wake` only ends the current wait.
package final class PollThread {
    /// How one wait ended.
    package enum Outcome {
        /// The owner's descriptors with their `revents` (all 0 after a timeout, a wake-up or EINTR).
        case ready([pollfd])
        /// `poll` failed with this errno; the thread ends.
        case failed(Int32)
    }

    private var thread: pthread_t?
    private let wakePipe: (read: Int32, write: Int32)
    private let stopping = Atomic<Bool>(false)

    /// Opens the wake-up pipe (close-on-exec).
    package init() throws(SystemCallError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw SystemCallError(call: "pipe", errno: .current) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        wakePipe = (fds[0], fds[1])
    }

    deinit {
        stop()
        close(wakePipe.read)
        close(wakePipe.write)
    }

    /// Starts the thread; `descriptors` and `ready` run on it and nowhere else.
    package func start(descriptors: @escaping () -> (fds: [pollfd], timeout: Int32),
                       ready: @escaping (Outcome) -> Void) throws(SystemCallError) {
        precondition(thread == nil, "PollThread started twice")
        thread = try PosixThread.start(detached: false) { [unowned self] in self.run(descriptors: descriptors, ready: ready) }
    }

    /// Ends the current wait: the thread asks for its descriptors again.
    package func wake() {
        var byte: UInt8 = 1
        _ = write(wakePipe.write, &byte, 1)
    }

    /// Stops the thread and waits for it; `ready` is not called after this returns. Stopping twice is harmless.
    package func stop() {
        guard let thread else { return }
        stopping.store(true, ordering: .relaxed)
        wake()
        pthread_join(thread, nil)
        self.thread = nil
    }

    private func run(descriptors: () -> (fds: [pollfd], timeout: Int32), ready: (Outcome) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while !stopping.load(ordering: .relaxed) {
            let (fds, timeout) = descriptors()
            var entries = fds + [pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)]
            if poll(&entries, nfds_t(entries.count), timeout) < 0 && errno != EINTR {
                ready(.failed(errno))
                return
            }
            if entries[entries.count - 1].revents != 0 { _ = read(wakePipe.read, &buffer, buffer.count) }
            if stopping.load(ordering: .relaxed) { return }
            ready(.ready(Array(entries.dropLast())))
        }
    }
}
