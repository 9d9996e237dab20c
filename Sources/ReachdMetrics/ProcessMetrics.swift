import Prometheus
import ReachdServiceKit
import ReachdSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The standard process metrics of Prometheus's client libraries, read from procfs at each scrape:
/// `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_cpu_seconds_total`,
/// `process_open_fds`, `process_max_fds`, `process_start_time_seconds`.
public final class ProcessMetrics: Sendable {
    private let resident: Gauge
    private let virtual: Gauge
    private let cpu: Counter
    /// CPU seconds already added to `cpu`.
    private let countedCPU = Mutex<Double>(0)
    private let openFDs: Gauge
    private let maxFDs: Gauge
    private let startTime: Gauge

    public init(registry: PrometheusCollectorRegistry) {
        resident = registry.gauge("process_resident_memory_bytes", help: "Resident memory size in bytes.")
        virtual = registry.gauge("process_virtual_memory_bytes", help: "Virtual memory size in bytes.")
        cpu = registry.counter("process_cpu_seconds_total", help: "Total user and system CPU time spent in seconds.")
        openFDs = registry.gauge("process_open_fds", help: "Number of open file descriptors.")
        maxFDs = registry.gauge("process_max_fds", help: "Maximum number of open file descriptors.")
        startTime = registry.gauge("process_start_time_seconds", help: "Start time of the process since unix epoch in seconds.")
        if let start = Self.startTimeSeconds() { startTime.set(start) }
    }

    /// Reads the current values.
    public func update() {
        if let stat = Self.stat() {
            let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
            let seconds = (stat.utime + stat.stime) / ticks
            let added = countedCPU.withLock { counted in
                defer { counted = max(counted, seconds) }
                return seconds - counted
            }
            if added > 0 { cpu.increment(by: added) }
            virtual.set(stat.vsize)
            resident.set(stat.rss * Double(sysconf(Int32(_SC_PAGESIZE))))
        }
        openFDs.set(Double(Self.openDescriptors()))
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { maxFDs.set(Double(limit.rlim_cur)) }
    }

    /// Fields of /proc/self/stat after the command name (which may hold spaces and parentheses).
    struct Stat {
        var utime: Double, stime: Double, startTicks: Double, vsize: Double, rss: Double
    }

    static func stat() -> Stat? {
        guard let text = SmallFile.text(at: "/proc/self/stat", limit: 1 << 20), let close = text.lastIndex(of: ")") else { return nil }
        // After ")": state is field 3; utime 14, stime 15, starttime 22, vsize 23, rss 24.
        let fields = text[text.index(after: close)...].split(separator: " ")
        func field(_ n: Int) -> Double? { fields.count > n - 3 ? Double(fields[n - 3]) : nil }
        guard let utime = field(14), let stime = field(15), let start = field(22), let vsize = field(23), let rss = field(24) else { return nil }
        return Stat(utime: utime, stime: stime, startTicks: start, vsize: vsize, rss: rss)
    }

    /// Boot time (`btime` of /proc/stat) plus the process's start in clock ticks after boot.
    static func startTimeSeconds() -> Double? {
        guard let stat = stat(), let text = SmallFile.text(at: "/proc/stat", limit: 1 << 20),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("btime ") }),
              let boot = Double(line.dropFirst("btime ".count)) else { return nil }
        return boot + stat.startTicks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func openDescriptors() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            if entry.pointee.d_name.0 != 0x2E { count += 1 }  // not "." or ".."
        }
        return max(0, count - 1)  // the directory's own descriptor
    }
}
