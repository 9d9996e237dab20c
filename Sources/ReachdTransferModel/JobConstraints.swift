import ReachdModel

/// What a job's owner asks of the moment it runs in, as WorkManager and BITS jobs carry it: the network's
/// cost, the power, a time and the destination's free space. The empty value is today's rule (large
/// transfers wait for an unmetered route unless `allowMetered`).
public struct JobConstraints: Hashable, Sendable {
    /// What the route may cost. Empty: the default rule. Any non-empty set allows a metered route unless it
    /// holds `unmetered`.
    public enum Network: String, Hashable, Sendable, CaseIterable, Codable {
        /// Any reachable route, metered or not.
        case any
        /// Every transfer, small ones too, waits for an unmetered route.
        case unmetered
        /// Not while the route's link is roaming.
        case notRoaming = "not-roaming"
        /// The bytes the job still has to move must fit what is left of its link's data budget.
        case withinBudget = "within-budget"
    }

    /// What the power must be.
    public enum Power: String, Hashable, Sendable, CaseIterable, Codable {
        /// Not while the host runs on battery (UPower `OnBattery`).
        case onACPower = "on-ac-power"
        /// Not while on battery and the battery is low (UPower's warning level, or below `lowBatteryPercent`).
        case batteryNotLow = "battery-not-low"
        /// Not while the power profile is `power-saver` (power-profiles-daemon).
        case notPowerSaver = "not-power-saver"
    }

    /// What happens once the deadline has passed and the job is not complete.
    public enum AfterDeadline: String, Hashable, Sendable, CaseIterable, Codable {
        /// The network constraints and the metered rule no longer hold it back: it may use a costlier path.
        case relax
        /// The job fails.
        case fail
    }

    public var network: Set<Network> = []
    public var power: Set<Power> = []
    /// The job waits until this instant.
    public var notBefore: Timestamp?
    /// The job runs only inside this daily window of local time.
    public var window: DailyWindow?
    public var deadline: Timestamp?
    public var afterDeadline: AfterDeadline = .relax
    /// Not while the destination's file system has less free space than the job still needs plus a margin.
    public var storageNotLow = false
    /// User-initiated: skips every deferral (constraints and the metered rule); the route must still be reachable.
    public var now = false

    public init() {}

    /// Nothing asked: today's default rule.
    public var isEmpty: Bool { self == JobConstraints() }

    /// The keys `set(_:to:)` takes, as the socket, D-Bus and reachctl name them.
    public static let keys = ["network", "power", "notBefore", "window", "deadline", "afterDeadline", "storageNotLow", "now"]

    /// Sets one constraint from its text (a comma-separated list for `network` and `power`, RFC 3339 for
    /// instants, `HH:MM-HH:MM` for the window, `true`/`false` for flags); the refusal, or nil.
    public mutating func set(_ key: String, to text: String) -> String? {
        guard text.utf8.count <= 256 else { return "\"\(key)\" is too long" }
        switch key {
        case "network":
            guard let values = Self.list(text, of: Network.self) else { return "\"network\" must list \(Self.names(Network.self))" }
            network = values
        case "power":
            guard let values = Self.list(text, of: Power.self) else { return "\"power\" must list \(Self.names(Power.self))" }
            power = values
        case "notBefore", "deadline":
            guard let instant = Timestamp(rfc3339: text) else { return "\"\(key)\" must be an RFC 3339 time, e.g. 2026-11-27T01:00:00Z" }
            if key == "notBefore" { notBefore = instant } else { deadline = instant }
        case "window":
            guard let parsed = DailyWindow(text) else { return "\"window\" must be HH:MM-HH:MM of local time, e.g. 01:00-06:00" }
            window = parsed
        case "afterDeadline":
            guard let action = AfterDeadline(rawValue: text) else { return "\"afterDeadline\" must be relax or fail" }
            afterDeadline = action
        case "storageNotLow", "now":
            guard text == "true" || text == "false" else { return "\"\(key)\" must be true or false" }
            if key == "now" { now = text == "true" } else { storageNotLow = text == "true" }
        default:
            return "unknown constraint \"\(key)\" (known: \(Self.keys.joined(separator: ", ")))"
        }
        return nil
    }

    /// The constraints as `key=value` words (`network=not-roaming,within-budget window=01:00-06:00`); "" when none.
    public var summary: String {
        var words: [String] = []
        if !network.isEmpty { words.append("network=" + network.map(\.rawValue).sorted().joined(separator: ",")) }
        if !power.isEmpty { words.append("power=" + power.map(\.rawValue).sorted().joined(separator: ",")) }
        if let notBefore { words.append("not-before=\(notBefore)") }
        if let window { words.append("window=\(window)") }
        if let deadline { words.append("deadline=\(deadline) after-deadline=\(afterDeadline.rawValue)") }
        if storageNotLow { words.append("storage-not-low") }
        if now { words.append("now") }
        return words.joined(separator: " ")
    }

    /// A comma-separated list of names; "" is the empty set.
    private static func list<T: RawRepresentable & Hashable>(_ text: String, of: T.Type) -> Set<T>? where T.RawValue == String {
        if text.isEmpty { return [] }
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingSpaces }
        guard !items.isEmpty, items.count <= 8 else { return nil }
        var values = Set<T>()
        for item in items {
            guard let value = T(rawValue: item) else { return nil }
            values.insert(value)
        }
        return values
    }

    private static func names<T: CaseIterable & RawRepresentable>(_: T.Type) -> String where T.RawValue == String {
        T.allCases.map(\.rawValue).joined(separator: ", ")
    }
}

/// As clients see and the store keeps them: the keys of `JobConstraints.keys`, lists as arrays, instants as RFC 3339.
extension JobConstraints: Codable {
    private enum CodingKeys: String, CodingKey { case network, power, notBefore, window, deadline, afterDeadline, storageNotLow, now }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(network.map(\.rawValue).sorted(), forKey: .network)
        try c.encode(power.map(\.rawValue).sorted(), forKey: .power)
        try c.encode(notBefore, forKey: .notBefore)
        try c.encode(window?.description, forKey: .window)
        try c.encode(deadline, forKey: .deadline)
        try c.encode(afterDeadline, forKey: .afterDeadline)
        try c.encode(storageNotLow, forKey: .storageNotLow)
        try c.encode(now, forKey: .now)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        network = Set(try c.decodeIfPresent([Network].self, forKey: .network) ?? [])
        power = Set(try c.decodeIfPresent([Power].self, forKey: .power) ?? [])
        notBefore = try c.decodeIfPresent(Timestamp.self, forKey: .notBefore)
        window = try c.decodeIfPresent(String.self, forKey: .window).flatMap(DailyWindow.init)
        deadline = try c.decodeIfPresent(Timestamp.self, forKey: .deadline)
        afterDeadline = try c.decodeIfPresent(AfterDeadline.self, forKey: .afterDeadline) ?? .relax
        storageNotLow = try c.decodeIfPresent(Bool.self, forKey: .storageNotLow) ?? false
        now = try c.decodeIfPresent(Bool.self, forKey: .now) ?? false
    }
}
