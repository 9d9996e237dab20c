import ReachdModel
import ReachdMonitor
import ServiceLifecycle

/// A part of reachd that acts on every change of the internet verdict (the connectivity check, the
/// captive-portal API queries).
protocol InternetVerdictFollower: Sendable {
    /// Called with every published verdict, under the hub's lock: it must not call the hub.
    func verdictChanged(_ verdict: Verdict)
    /// Ends what is running; no further work starts.
    func stop()
}

/// Runs a follower in reachd's service group: from the group's start it gets the current verdict and every
/// change after it, in order (taken under the hub's one lock: never an older verdict after a newer one); at
/// graceful shutdown it stops following the hub and is stopped.
struct VerdictFollowerService<Follower: InternetVerdictFollower>: Service {
    let follower: Follower
    let hub: VerdictHub

    func run() async {
        let observer = hub.addObserver(startingWithCurrent: true) { [follower] in follower.verdictChanged($0.verdict) }
        try? await gracefulShutdown()
        hub.removeObserver(observer)
        follower.stop()
    }
}
