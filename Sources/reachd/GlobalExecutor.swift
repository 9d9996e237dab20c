import CReachdExecutor
import NIOCore
import NIOPosix

/// Swift Concurrency's global executor made NIO's singleton event loops, so that no libdispatch worker pool (whose
/// monitor wakes the daemon every second) ever starts.
enum GlobalExecutor {
    /// The runtime's hook type: the job, and the enqueue the hook replaces.
    private typealias EnqueueHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Installs the event loops as the global executor, before any task exists. NIO's own take-over finds the
    /// runtime's hook with `dlsym`, which sees nothing in the installed daemon's static runtime; there the hook is
    /// set by reference. Whether either took shows in where async code runs (`currentEventLoop`).
    static func runOnEventLoops() {
        if NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() { return }
        // Only where NIO itself would install its hook: on a later runtime the hook's layout is not known.
        #if compiler(<6.6)
        withUnsafeTemporaryAllocation(of: EnqueueHook.self, capacity: 1) { hook in
            // As NIO does: a thin function, read as the pointer the runtime calls, handing the job to NIO's own enqueue.
            hook.baseAddress!.initialize(to: { job, _ in
                MultiThreadedEventLoopGroup.singleton.any().enqueue(ExecutorJob(job))
            })
            hook.baseAddress!.withMemoryRebound(to: UnsafeMutableRawPointer.self, capacity: 1) {
                _ = reachd_install_enqueue_global_hook($0.pointee)
            }
        }
        #endif
    }
}
