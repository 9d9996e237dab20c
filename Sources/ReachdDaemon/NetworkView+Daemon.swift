import ReachdMonitor

extension NetworkView {
    /// The watcher as a service of the daemon's service group.
    package var watcherService: WatcherService { WatcherService(watcher: watcher) }
}

extension DaemonMetrics: NetworkMetrics {}
