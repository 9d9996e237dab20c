import CReachdMemory

/// The pages of code and constants a daemon faulted in for work it does once, or rarely: start-up (the command
/// line, the configuration, NIO's and the libraries' set-up, the job store), and serving a flood of clients
/// (reachd: their limits, errors, time-outs and drops). They are unmapped once the daemon serves, and again after such a flood
/// has left.
/// They stay in the page cache, which the kernel reclaims like any file's (as it may reclaim them from a process at
/// any time); the ones the daemon runs again (for a client, a network change) are mapped back at their next touch,
/// from the cache. An idle daemon's resident memory is then the code it runs, not all the code it has run once.
package enum ReadOnlyPages {
    /// Unmaps the whole pages of the read-only segments of the program and its libraries (never a writable one's,
    /// nor code relocated in place); returns the bytes unmapped.
    @discardableResult
    package static func release() -> Int {
        Int(reachd_unmap_read_only_pages())
    }
}
