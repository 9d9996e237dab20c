#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How long a data budget lasts before its count starts again, at local midnight of the period's first day.
public enum BudgetPeriod: Hashable, Sendable {
    case day
    /// Starts on an ISO weekday: 1 is Monday, 7 is Sunday.
    case week(startWeekday: Int)
    /// Starts on a day of the month, 1 to 28 (every month has it).
    case month(startDay: Int)

    /// `day`, `week` or `month`.
    public var name: String {
        switch self {
        case .day: "day"
        case .week: "week"
        case .month: "month"
        }
    }

    /// The first day of the period that contains `date`.
    public func start(containing date: LocalDate) -> LocalDate {
        switch self {
        case .day:
            return date
        case .week(let weekday):
            return date.adding(days: -((date.isoWeekday - weekday + 7) % 7))
        case .month(let startDay):
            let month = date.firstOfMonth(adding: date.day >= startDay ? 0 : -1)
            return month.adding(days: startDay - 1)
        }
    }

    /// The first day of the period after the one that starts on `start`.
    public func nextStart(after start: LocalDate) -> LocalDate {
        switch self {
        case .day: start.adding(days: 1)
        case .week: start.adding(days: 7)
        case .month(let startDay): start.firstOfMonth(adding: 1).adding(days: startDay - 1)
        }
    }
}

/// Where a link's use stands against its budget.
public enum BudgetState: String, Hashable, Sendable, Codable, CaseIterable {
    case below
    /// At or above the budget's approaching share, below the limit.
    case approaching
    /// At or above the limit.
    case over
}

/// A `[[budget]]` rule: the bytes the links whose name matches, or the links on one Wi-Fi network, may move
/// (received and sent) per period.
public struct DataBudget: Hashable, Sendable {
    /// A shell glob on the interface name (`fnmatch(3)`), as `[[interface]]` rules have; unused with `network`.
    public var match: String
    /// The SSID of the Wi-Fi network whose use the budget counts, on whichever link is on it; nil: the links `match` names.
    public var network: [UInt8]?
    public var limitBytes: UInt64
    public var period: BudgetPeriod
    /// The share of the limit, in percent (1 to 99), from which the state is `approaching`.
    public var approachingPercent: Int

    public init(match: String, limitBytes: UInt64, period: BudgetPeriod, approachingPercent: Int = 80) {
        self.match = match
        self.limitBytes = limitBytes
        self.period = period
        self.approachingPercent = approachingPercent
    }

    /// A network's budget: the links on the Wi-Fi network `ssid`.
    public init(network ssid: [UInt8], limitBytes: UInt64, period: BudgetPeriod, approachingPercent: Int = 80) {
        self.init(match: "", limitBytes: limitBytes, period: period, approachingPercent: approachingPercent)
        network = ssid
    }

    public func matches(_ interface: String) -> Bool { network == nil && fnmatch(match, interface, 0) == 0 }

    /// Whether the budget counts `interface`'s bytes while it is on the Wi-Fi network `joined` (nil: none).
    public func covers(_ interface: String, network joined: [UInt8]?) -> Bool {
        guard let network else { return matches(interface) }
        return joined == network
    }

    /// How errors and logs name it: its match, or `network "Phone"`.
    public var label: String {
        network.map { "network \"\(WifiIdentity(ssid: $0)?.name ?? "")\"" } ?? match
    }

    /// What identifies the budget's count across restarts: the match (or the network's SSID in hex) and the period
    /// with its start (a changed limit or approaching share keeps the count; another match or period starts a new one).
    public var key: String {
        let scope = network.map { "network " + WifiIdentity.hex($0) } ?? match
        return switch period {
        case .day: "\(scope) day"
        case .week(let weekday): "\(scope) week \(weekday)"
        case .month(let day): "\(scope) month \(day)"
        }
    }

    /// The state for `used` bytes.
    public func state(used: UInt64) -> BudgetState {
        if used >= limitBytes { return .over }
        // limit × percent / 100 without overflow, rounded down.
        let share = UInt64(approachingPercent)
        let threshold = limitBytes / 100 * share + limitBytes % 100 * share / 100
        return used >= threshold ? .approaching : .below
    }
}

/// A budget's standing, as verdicts carry it for the link they leave on.
public struct BudgetStatus: Hashable, Sendable {
    public var state: BudgetState
    public var usedBytes: UInt64
    public var limitBytes: UInt64
    /// `day`, `week` or `month`.
    public var period: String
    /// When the count starts again.
    public var resetsAt: Timestamp

    public init(state: BudgetState, usedBytes: UInt64, limitBytes: UInt64, period: String, resetsAt: Timestamp) {
        self.state = state
        self.usedBytes = usedBytes
        self.limitBytes = limitBytes
        self.period = period
        self.resetsAt = resetsAt
    }

    /// The same status without the used bytes: what tells a change of the budget from its count moving.
    public var withoutCount: BudgetStatus {
        var copy = self
        copy.usedBytes = 0
        return copy
    }
}
