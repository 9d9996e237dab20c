import ReachdMonitor

extension DaemonMetrics: NetworkMetrics {}
