import ReachdMonitor
import ServiceLifecycle

/// The captive-portal API queries in reachd's service group: from the group's start they follow the internet
/// verdict; at graceful shutdown they stop following the hub and the running query is cancelled.
struct CaptivePortalMonitorService: Service {
    let monitor: CaptivePortalMonitor
    let hub: VerdictHub

    func run() async {
        let observer = hub.addObserver { [monitor] in monitor.verdictChanged($0.verdict) }
        if let current = hub.current { monitor.verdictChanged(current.verdict) }
        try? await gracefulShutdown()
        hub.removeObserver(observer)
        monitor.stop()
    }
}
