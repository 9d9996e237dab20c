import ReachdModel

/// reachd's configuration file (TOML); `docs/configuration.md` and `reachd.toml.example` describe it.
public struct Configuration: Hashable, Sendable {
    /// Interface rules, first match wins.
    public var interfaceRules: [InterfaceRule]
    /// `[[network]]`: Wi-Fi network rules, first match wins; they come before the interface rules.
    public var networkRules: [NetworkRule] = []

    public init(interfaceRules: [InterfaceRule] = []) {
        self.interfaceRules = interfaceRules
    }

    /// Destinations that are never metered, whatever link they are reached over.
    public var unmeteredDestinations: [UnmeteredDestination] = []
    /// The connectivity check; nil (the default) means none is made.
    public var connectivityCheck: ConnectivityCheck?
    /// How often watched host names are resolved again, in seconds (0: only after network changes).
    public var hostRefreshSeconds: Double = 300
    /// `[downloads] metered_threshold`: transfers above this many bytes (or of unknown size) wait for an unmetered route.
    public var meteredThreshold: Int64 = 10 * 1024 * 1024
    /// `[downloads] concurrency`: transfers running at once.
    public var transferConcurrency = 2
    /// `[downloads] netrc`: one netrc file for every job's credentials; nil: each user's `~/.netrc`.
    public var netrcPath: String?
    /// `[downloads] ca_file`: PEM certificates trusted for https besides the system's.
    public var caFile: String?
    /// `[downloads] max_jobs_per_user` and `max_jobs`: jobs one user, and the service, may hold (finished included).
    public var maximumJobsPerUser = 1000
    public var maximumJobs = 10000
    /// `[downloads] keep_finished_seconds`: finished jobs are forgotten after this long; 0 keeps them. At most 10 years
    /// (315360000 s): the scheduler counts it in microseconds, which a larger value could overflow.
    public var keepFinishedSeconds: Int64 = 30 * 86400
    /// `[downloads] proxy` and `no_proxy`: the proxy URL every transfer goes through, and the hosts that skip it
    /// (checked by reachd-transfers at start: the proxy's syntax is the transfers' own).
    public var transferProxy: String?
    public var transferNoProxy: String?
    /// `[downloads] max_rate` and `metered_max_rate`: bytes per second all the instance's transfers together may
    /// move, and those on metered routes; nil: no cap.
    public var transferMaximumRate: Int64?
    public var meteredTransferMaximumRate: Int64?
    /// `[downloads] read_timeout_seconds`: a server that sends nothing for this long loses the connection
    /// (the attempt is retried later).
    public var readTimeoutSeconds: Double = 30
    /// `[cache] capacity_bytes`: the offline cache's size; least recently used entries go beyond it.
    public var cacheCapacity: Int64 = 256 * 1024 * 1024
    /// `[cache] max_entries` and `max_entries_per_user`: entries in all, and of one uid; least recently used ones go beyond.
    public var cacheMaximumEntries = 65536
    public var cacheMaximumEntriesPerUser = 4096
    /// `[metrics] listen`: where reachd serves Prometheus metrics; nil (the default): nowhere.
    public var metricsListen: MetricsAddress?
    /// `[metrics] transfers_listen`: where reachd-transfers serves them; nil: nowhere.
    public var transfersMetricsListen: MetricsAddress?
    /// `[connections] per_user` and `total`: connections to reachd's socket one user, and all users, may hold;
    /// nil: reachd's defaults (docs/limits.md).
    public var connectionsPerUser: Int?
    public var connections: Int?

    /// `[metered]`: the metered sources below NetworkManager that may speak.
    public var meteredSources: MeteredSources = .all
    /// `[captive_portal] api`: ask the captive-portal API a network announces (RFC 8908).
    public var captivePortalAPI = true
    /// `[[budget]]`: data budgets, first match wins (docs/configuration.md).
    public var budgets: [DataBudget] = []

    /// The classifier these rules configure.
    public var classifier: InterfaceClassifier {
        InterfaceClassifier(rules: interfaceRules, networkRules: networkRules, meteredSources: meteredSources)
    }

    /// The host judge these rules configure.
    public var hostJudge: HostVerdict { HostVerdict(classifier: classifier, unmetered: unmeteredDestinations) }
}

/// A configuration file that cannot be used, with the place and the reason.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension Configuration {
    private static let topLevelKeys: Set<String> = ["interface", "unmetered", "connectivity", "hosts", "downloads", "cache", "metrics", "connections", "metered", "captive_portal", "budget", "network"]
    private static let connectivityKeys: Set<String> = ["url", "expect_status", "expect_body", "timeout_seconds", "interval_seconds"]
    private static let unmeteredKeys: Set<String> = ["host", "prefix"]
    private static let interfaceKeys: Set<String> = ["match", "kind", "metered", "ignore", "constrained"]

    /// Parses TOML text; throws `ConfigurationError` naming the bad key or line.
    public init(toml text: String) throws {
        let table: TOMLTable
        do {
            table = try TOMLParser.parse(text)
        } catch let error as TOMLError {
            throw ConfigurationError("invalid TOML at \(error)")
        }
        for key in table.keys where !Self.topLevelKeys.contains(key) {
            throw ConfigurationError("unknown key \"\(key)\" (known: \(Self.topLevelKeys.sorted().joined(separator: ", ")))")
        }
        var rules: [InterfaceRule] = []
        if let value = table["interface"] {
            guard let array = value.array, array.allSatisfy({ $0.table != nil }) else {
                throw ConfigurationError("\"interface\" must be an array of tables: write [[interface]]")
            }
            for (position, element) in array.enumerated() {
                guard let entry = element.table else {
                    throw ConfigurationError("interface #\(position + 1) must be a table")
                }
                rules.append(try Self.rule(from: entry, position: position + 1))
            }
        }
        self.init(interfaceRules: rules)
        if let value = table["unmetered"] {
            guard let array = value.array, array.allSatisfy({ $0.table != nil }) else {
                throw ConfigurationError("\"unmetered\" must be an array of tables: write [[unmetered]]")
            }
            for (position, element) in array.enumerated() {
                unmeteredDestinations.append(try Self.unmetered(from: element.table!, position: position + 1))
            }
        }
        if let value = table["hosts"] {
            guard let section = value.table else { throw ConfigurationError("\"hosts\" must be a table: write [hosts]") }
            for key in section.keys where key != "refresh_seconds" {
                throw ConfigurationError("hosts: unknown key \"\(key)\" (known: refresh_seconds)")
            }
            hostRefreshSeconds = try Self.seconds(section["refresh_seconds"], name: "hosts: refresh_seconds", default: hostRefreshSeconds, minimum: 0)
        }
        if let value = table["downloads"] {
            guard let section = value.table else { throw ConfigurationError("\"downloads\" must be a table: write [downloads]") }
            for key in section.keys where !["metered_threshold", "concurrency", "netrc", "ca_file", "read_timeout_seconds",
                                        "max_jobs_per_user", "max_jobs", "keep_finished_seconds", "proxy", "no_proxy", "max_rate", "metered_max_rate"].contains(key) {
                throw ConfigurationError("downloads: unknown key \"\(key)\" (known: ca_file, concurrency, keep_finished_seconds, max_jobs, max_jobs_per_user, max_rate, metered_max_rate, metered_threshold, netrc, no_proxy, proxy, read_timeout_seconds)")
            }
            for (key, value) in [("max_rate", section["max_rate"]), ("metered_max_rate", section["metered_max_rate"])] {
                guard let value else { continue }
                guard let rate = value.integer.flatMap({ (ByteRate.minimum...ByteRate.maximum).contains($0) ? $0 : nil })
                        ?? value.string.flatMap(ByteRate.bytesPerSecond) else {
                    throw ConfigurationError("downloads: \"\(key)\" must be bytes per second, a number or a string like \"500k\" or \"2M\" (1024 to 1099511627776)")
                }
                if key == "max_rate" { transferMaximumRate = rate } else { meteredTransferMaximumRate = rate }
            }
            for (key, value) in [("proxy", section["proxy"]), ("no_proxy", section["no_proxy"])] {
                guard let value else { continue }
                guard let text = value.string, !text.isEmpty, text.utf8.count <= 4096 else {
                    throw ConfigurationError("downloads: \"\(key)\" must be a non-empty string (at most 4096 bytes)")
                }
                if key == "proxy" { transferProxy = text } else { transferNoProxy = text }
            }
            readTimeoutSeconds = try Self.seconds(section["read_timeout_seconds"], name: "downloads: read_timeout_seconds",
                                                  default: readTimeoutSeconds, minimum: 0.1)
            for (key, value) in [("netrc", section["netrc"]), ("ca_file", section["ca_file"])] {
                guard let value else { continue }
                guard let path = value.string, path.hasPrefix("/") else { throw ConfigurationError("downloads: \"\(key)\" must be an absolute path") }
                if key == "netrc" { netrcPath = path } else { caFile = path }
            }
            if let threshold = section["metered_threshold"] {
                guard let bytes = threshold.integer, bytes >= 0 else {
                    throw ConfigurationError("downloads: \"metered_threshold\" must be a number of bytes (0 or more)")
                }
                meteredThreshold = bytes
            }
            for (key, value) in [("max_jobs_per_user", section["max_jobs_per_user"]), ("max_jobs", section["max_jobs"])] {
                guard let value else { continue }
                guard let count = value.integer, (1...1_000_000).contains(count) else {
                    throw ConfigurationError("downloads: \"\(key)\" must be 1 to 1000000")
                }
                if key == "max_jobs" { maximumJobs = Int(count) } else { maximumJobsPerUser = Int(count) }
            }
            if let keep = section["keep_finished_seconds"] {
                guard let seconds = keep.integer, (0...315_360_000).contains(seconds) else {
                    throw ConfigurationError("downloads: \"keep_finished_seconds\" must be 0 to 315360000 seconds (10 years; 0 keeps finished jobs)")
                }
                keepFinishedSeconds = seconds
            }
            if let concurrency = section["concurrency"] {
                guard let count = concurrency.integer, (1...64).contains(count) else {
                    throw ConfigurationError("downloads: \"concurrency\" must be 1 to 64")
                }
                transferConcurrency = Int(count)
            }
        }
        if let value = table["cache"] {
            guard let section = value.table else { throw ConfigurationError("\"cache\" must be a table: write [cache]") }
            for key in section.keys where !["capacity_bytes", "max_entries", "max_entries_per_user"].contains(key) {
                throw ConfigurationError("cache: unknown key \"\(key)\" (known: capacity_bytes, max_entries, max_entries_per_user)")
            }
            for (key, value) in [("max_entries", section["max_entries"]), ("max_entries_per_user", section["max_entries_per_user"])] {
                guard let value else { continue }
                guard let count = value.integer, (1...10_000_000).contains(count) else {
                    throw ConfigurationError("cache: \"\(key)\" must be 1 to 10000000")
                }
                if key == "max_entries" { cacheMaximumEntries = Int(count) } else { cacheMaximumEntriesPerUser = Int(count) }
            }
            if let capacity = section["capacity_bytes"] {
                guard let bytes = capacity.integer, bytes >= 0 else { throw ConfigurationError("cache: \"capacity_bytes\" must be a number of bytes") }
                cacheCapacity = bytes
            }
        }
        if let value = table["metrics"] {
            guard let section = value.table else { throw ConfigurationError("\"metrics\" must be a table: write [metrics]") }
            for key in section.keys where !["listen", "transfers_listen"].contains(key) {
                throw ConfigurationError("metrics: unknown key \"\(key)\" (known: listen, transfers_listen)")
            }
            for key in ["listen", "transfers_listen"] {
                guard let value = section[key] else { continue }
                guard let text = value.string, let address = MetricsAddress(text) else {
                    throw ConfigurationError("metrics: \"\(key)\" must be HOST:PORT (such as \"127.0.0.1:9464\" or \"[::1]:9464\") or an absolute socket path")
                }
                if key == "listen" { metricsListen = address } else { transfersMetricsListen = address }
            }
            if let address = metricsListen, address == transfersMetricsListen, address.port != 0 {
                throw ConfigurationError("metrics: \"listen\" and \"transfers_listen\" must differ: each daemon binds its own")
            }
        }
        try readConnections(table["connections"])
        try readMetered(table["metered"])
        try readCaptivePortal(table["captive_portal"])
        try readBudgets(table["budget"])
        try readNetworks(table["network"])
        if let value = table["connectivity"] {
            guard let section = value.table else { throw ConfigurationError("\"connectivity\" must be a table: write [connectivity]") }
            connectivityCheck = try Self.connectivity(from: section)
        }
    }

    private static func connectivity(from section: TOMLTable) throws -> ConnectivityCheck {
        for key in section.keys where !connectivityKeys.contains(key) {
            throw ConfigurationError("connectivity: unknown key \"\(key)\" (known: \(connectivityKeys.sorted().joined(separator: ", ")))")
        }
        guard let text = section["url"]?.string else { throw ConfigurationError("connectivity: \"url\" (http://HOST[:PORT]/PATH) is required") }
        guard let url = ProbeURL(text) else {
            throw ConfigurationError("connectivity: \"url\" must be a plain http:// URL (https is not supported): \(text)")
        }
        var check = ConnectivityCheck(url: url)
        if let value = section["expect_status"] {
            guard let status = value.integer, (100...599).contains(status) else { throw ConfigurationError("connectivity: \"expect_status\" must be an HTTP status code") }
            check.expectStatus = Int(status)
        }
        if let value = section["expect_body"] {
            guard let body = value.string else { throw ConfigurationError("connectivity: \"expect_body\" must be a string") }
            check.expectBody = body
        }
        check.timeoutSeconds = try seconds(section["timeout_seconds"], name: "connectivity: timeout_seconds", default: check.timeoutSeconds, minimum: 0.1)
        check.intervalSeconds = try seconds(section["interval_seconds"], name: "connectivity: interval_seconds", default: check.intervalSeconds, minimum: 0)
        return check
    }

    private static func seconds(_ value: TOMLValue?, name: String, default fallback: Double, minimum: Double) throws -> Double {
        guard let value else { return fallback }
        let number: Double? = switch value {
        case .integer(let n): Double(n)
        case .float(let d): d
        default: nil
        }
        guard let number, number >= minimum, number <= 86_400 else {
            throw ConfigurationError("\(name) must be a number of seconds from \(minimum) to 86400")
        }
        return number
    }

    private static func unmetered(from entry: TOMLTable, position: Int) throws -> UnmeteredDestination {
        let place = "unmetered #\(position)"
        for key in entry.keys where !unmeteredKeys.contains(key) {
            throw ConfigurationError("\(place): unknown key \"\(key)\" (known: host, prefix)")
        }
        var rule = UnmeteredDestination()
        if let value = entry["host"] {
            guard let host = value.string, !host.isEmpty else { throw ConfigurationError("\(place): \"host\" must be a name or glob") }
            rule.host = host
        }
        if let value = entry["prefix"] {
            let parts = value.string?.split(separator: "/", omittingEmptySubsequences: false) ?? []
            guard parts.count == 2, let address = IPAddress(String(parts[0])), let length = Int(parts[1]),
                  (0...address.bytes.count * 8).contains(length) else {
                throw ConfigurationError("\(place): \"prefix\" must look like 192.0.2.0/24 or 2001:db8::/32")
            }
            rule.prefix = address
            rule.prefixLength = length
        }
        guard rule.host != nil || rule.prefix != nil else { throw ConfigurationError("\(place): give \"host\" or \"prefix\"") }
        return rule
    }
}

extension Configuration {

    private static func rule(from entry: TOMLTable, position: Int) throws -> InterfaceRule {
        let place = "interface #\(position)"
        for key in entry.keys where !interfaceKeys.contains(key) {
            throw ConfigurationError("\(place): unknown key \"\(key)\" (known: \(interfaceKeys.sorted().joined(separator: ", ")))")
        }
        guard let match = entry["match"]?.string, !match.isEmpty else {
            throw ConfigurationError("\(place): \"match\" (an interface name or glob) is required")
        }
        var rule = InterfaceRule(match: match)
        if let value = entry["kind"] {
            guard let name = value.string, let kind = InterfaceKind(rawValue: name) else {
                let kinds = InterfaceKind.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationError("\(place) (\(match)): \"kind\" must be one of \(kinds)")
            }
            rule.kind = kind
        }
        if let value = entry["metered"] {
            guard let metered = value.bool else {
                throw ConfigurationError("\(place) (\(match)): \"metered\" must be true or false")
            }
            rule.metered = metered
        }
        if let value = entry["ignore"] {
            guard let ignore = value.bool else {
                throw ConfigurationError("\(place) (\(match)): \"ignore\" must be true or false")
            }
            rule.ignore = ignore
        }
        if let value = entry["constrained"] {
            guard let constrained = value.bool else {
                throw ConfigurationError("\(place) (\(match)): \"constrained\" must be true or false")
            }
            rule.constrained = constrained
        }
        return rule
    }
}

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

extension Configuration {
    /// What every refusal of a configuration file ends with: where its keys are described.
    static let fixAdvice = "; fix the file and start again (every key: man 5 reachd.toml, docs/configuration.md)"

    /// Reads and parses a configuration file; errors name the file, the cause and the fix.
    public static func load(path: String) throws -> Configuration {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            let reason = access(path, R_OK) == 0 ? "" : " (\(String(cString: strerror(errno))))"
            throw ConfigurationError("\(path): cannot read the file\(reason); pass a file reachd can read with --config PATH")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError("\(path): not UTF-8 text" + fixAdvice)
        }
        do {
            return try Configuration(toml: text)
        } catch let error as ConfigurationError {
            throw ConfigurationError("\(path): \(error.message)" + fixAdvice)
        }
    }
}
