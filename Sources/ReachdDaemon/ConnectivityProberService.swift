import ReachdMonitor
import ServiceLifecycle

/// The connectivity check in reachd's service group: from the group's start it checks after every change of the
/// internet path; at graceful shutdown it stops following the hub and cancels the running check.
struct ConnectivityProberService: Service {
    let prober: ConnectivityProber
    let hub: VerdictHub

    func run() async {
        let observer = hub.addObserver { [prober] in prober.verdictChanged($0.verdict) }
        if let current = hub.current { prober.verdictChanged(current.verdict) }
        try? await gracefulShutdown()
        hub.removeObserver(observer)
        prober.stop()
    }
}
