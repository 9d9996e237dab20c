import Prometheus

/// Metrics made with their full name and help text (the `# HELP` line), as docs/metrics.md lists them.
extension PrometheusCollectorRegistry {
    public func counter(_ name: String, help: String, labels: [(String, String)] = []) -> Counter {
        makeCounter(descriptor: Self.descriptor(name, help), labels: labels)
    }

    public func gauge(_ name: String, help: String, labels: [(String, String)] = []) -> Gauge {
        makeGauge(descriptor: Self.descriptor(name, help), labels: labels)
    }

    public func durationHistogram(_ name: String, help: String, buckets: [Duration]) -> DurationHistogram {
        makeDurationHistogram(descriptor: Self.descriptor(name, help), buckets: buckets)
    }

    private static func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }
}
