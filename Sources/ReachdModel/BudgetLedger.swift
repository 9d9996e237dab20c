/// One reading of a link's kernel counters: received plus sent bytes since the link was created.
public struct CounterReading: Hashable, Sendable {
    public var interface: String
    /// The link's index: a re-created link has a new one.
    public var index: Int32
    public var bytes: UInt64
    /// The SSID of the Wi-Fi network the link was on; nil for none.
    public var network: [UInt8]?

    public init(interface: String, index: Int32, bytes: UInt64, network: [UInt8]? = nil) {
        self.interface = interface
        self.index = index
        self.bytes = bytes
        self.network = network
    }
}

/// The last counter counted of one link.
public struct LinkCounter: Hashable, Sendable {
    public var index: Int32
    public var bytes: UInt64

    public init(index: Int32, bytes: UInt64) {
        self.index = index
        self.bytes = bytes
    }
}

/// The bytes one budget counted in its current period, from successive counter readings. Pure: the time and
/// the calendar are passed in.
///
/// A link's bytes count as the difference to its last reading. A link not seen before, one with another index
/// (re-created), another boot, or a counter below the last reading (reset) counts its whole reading: the
/// counter started from zero since. Nothing is ever subtracted. A new period (a later first day for the
/// time given) starts again from zero, keeping the links' last readings.
public struct BudgetLedger: Hashable, Sendable {
    /// The first day of the period counted; nil before the first reading.
    public var periodStart: LocalDate?
    public var usedBytes: UInt64 = 0
    /// The boot the counters were read in (`/proc/sys/kernel/random/boot_id`).
    public var bootID: String?
    /// The last reading of each link counted, by name (links missing from a reading keep theirs, up to
    /// `maximumCounters` in all).
    public var counters: [String: LinkCounter] = [:]

    /// Last readings kept of links missing from the latest reading, beyond those in it.
    public static let maximumCounters = 1024

    public init(periodStart: LocalDate? = nil, usedBytes: UInt64 = 0, bootID: String? = nil, counters: [String: LinkCounter] = [:]) {
        self.periodStart = periodStart
        self.usedBytes = usedBytes
        self.bootID = bootID
        self.counters = counters
    }

    /// Counts `readings` (the links this budget covers) taken at `time` in boot `bootID`.
    /// A time before the period counted (the clock stepped back, or not set yet after a boot) counts in it still,
    /// unless the clock is `synchronized` and further back than the period just before (then the period was counted
    /// on a clock that ran ahead).
    public mutating func record(_ readings: [CounterReading], bootID: String, at time: Timestamp, period: BudgetPeriod, calendar: any LocalCalendar,
                                synchronized: Bool = false) {
        enter(bootID: bootID, at: time, period: period, calendar: calendar, synchronized: synchronized)
        var next: [String: LinkCounter] = [:]
        for reading in readings {
            count(reading.bytes, since: counters[reading.interface], index: reading.index)
            next[reading.interface] = LinkCounter(index: reading.index, bytes: reading.bytes)
        }
        // A link missing from this reading (gone, or its counters could not be read this time) keeps its last
        // reading: back with the same index it counts the difference, not its whole counter again.
        for (interface, counter) in counters where next[interface] == nil && next.count < Self.maximumCounters {
            next[interface] = counter
        }
        counters = next
    }

    /// Counts the last reading of a link just deleted (its `RTM_DELLINK`), other links' counters untouched. The link's
    /// counter then holds that reading: the same deletion told twice counts nothing more, and a new link of the same
    /// name (another index) counts its whole reading. A counter already of a later link of that name is kept (the
    /// deletion's whole reading counts: never fewer bytes than moved).
    public mutating func recordDeleted(_ reading: CounterReading, bootID: String, at time: Timestamp, period: BudgetPeriod,
                                       calendar: any LocalCalendar, synchronized: Bool = false) {
        enter(bootID: bootID, at: time, period: period, calendar: calendar, synchronized: synchronized)
        let last = counters[reading.interface]
        count(reading.bytes, since: last, index: reading.index)
        if let last, last.index > reading.index { return }
        if last != nil || counters.count < Self.maximumCounters {
            counters[reading.interface] = LinkCounter(index: reading.index, bytes: reading.bytes)
        }
    }

    /// Starts the period of `time` from zero when it is a new one, and forgets the counters of another boot.
    private mutating func enter(bootID: String, at time: Timestamp, period: BudgetPeriod, calendar: any LocalCalendar, synchronized: Bool) {
        let start = counted(period.start(containing: calendar.date(at: time)), period: period, synchronized: synchronized)
        if periodStart != start {
            periodStart = start
            usedBytes = 0
        }
        if self.bootID != bootID {
            self.bootID = bootID
            counters = [:]
        }
    }

    /// Adds what a link's counter `bytes` moved since `last`: the difference for the same link, the whole counter for
    /// another link (index), one not seen before or one reset.
    private mutating func count(_ bytes: UInt64, since last: LinkCounter?, index: Int32) {
        let delta: UInt64
        if let last, last.index == index, bytes >= last.bytes {
            delta = bytes - last.bytes
        } else {
            delta = bytes
        }
        usedBytes = usedBytes.addingSaturated(delta)
    }

    /// The budget's standing at `time`: zero used once a new period began, even before a reading in it; the
    /// period counted at a time before it.
    public func status(of budget: DataBudget, at time: Timestamp, calendar: any LocalCalendar, synchronized: Bool = false) -> BudgetStatus {
        let start = counted(budget.period.start(containing: calendar.date(at: time)), period: budget.period, synchronized: synchronized)
        let used = start == periodStart ? usedBytes : 0
        return BudgetStatus(
            state: budget.state(used: used), usedBytes: used, limitBytes: budget.limitBytes, period: budget.period.name,
            resetsAt: calendar.startOfDay(budget.period.nextStart(after: start))
        )
    }

    /// The period `start` names, or the one counted when `start` is earlier: bytes are never moved back into a
    /// period that has ended, whose count is gone. A synchronized clock more than a period back is believed.
    private func counted(_ start: LocalDate, period: BudgetPeriod, synchronized: Bool) -> LocalDate {
        guard let periodStart, start < periodStart else { return start }
        return !synchronized || period.nextStart(after: start) >= periodStart ? periodStart : start
    }
}

/// Every configured budget with its ledger; a link counts for the budget of the Wi-Fi network it is on, else for the
/// first budget that matches its name.
///
/// A link that moves into a budget (it joined the budget's network) counts there only what it moves from its last
/// reading on: the bytes it moved on other networks never count in this one. Between two readings (2 s in reachd),
/// a switch's bytes count in the network the link is on at the second.
public struct BudgetBook: Hashable, Sendable {
    public let budgets: [DataBudget]
    /// By `DataBudget.key`.
    public private(set) var ledgers: [String: BudgetLedger]
    /// Each link's last reading and the budget it counted in (not saved: after a restart, a link counts from what
    /// its budget's ledger last saw of it).
    private var lastReadings: [String: (key: String?, reading: CounterReading)] = [:]

    public static func == (lhs: BudgetBook, rhs: BudgetBook) -> Bool { lhs.budgets == rhs.budgets && lhs.ledgers == rhs.ledgers }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(budgets)
        hasher.combine(ledgers)
    }

    /// `saved`: the ledgers read back from the state file (those of budgets no longer configured are dropped).
    public init(budgets: [DataBudget], saved: [String: BudgetLedger] = [:]) {
        self.budgets = budgets
        var ledgers: [String: BudgetLedger] = [:]
        for budget in budgets { ledgers[budget.key] = saved[budget.key] ?? BudgetLedger() }
        self.ledgers = ledgers
    }

    /// The budget that covers `interface` while it is on the Wi-Fi network `network`: that network's, else the first
    /// that matches its name (as `[[network]]` rules come before `[[interface]]` rules).
    public func budget(for interface: String, network: [UInt8]? = nil) -> DataBudget? {
        budgets.first { $0.network != nil && $0.covers(interface, network: network) } ?? budgets.first { $0.matches(interface) }
    }

    /// The standing of every network's budget, by SSID.
    public func networkStatuses(at time: Timestamp, calendar: any LocalCalendar, synchronized: Bool = false) -> [[UInt8]: BudgetStatus] {
        var statuses: [[UInt8]: BudgetStatus] = [:]
        for budget in budgets {
            guard let network = budget.network, statuses[network] == nil, let ledger = ledgers[budget.key] else { continue }
            statuses[network] = ledger.status(of: budget, at: time, calendar: calendar, synchronized: synchronized)
        }
        return statuses
    }

    /// Counts the readings of every link (those no budget covers are skipped).
    public mutating func record(_ readings: [CounterReading], bootID: String, at time: Timestamp, calendar: any LocalCalendar, synchronized: Bool = false) {
        var covered: [String: [CounterReading]] = [:]
        for reading in readings {
            let budget = budget(for: reading.interface, network: reading.network)
            if let budget, let last = lastReadings[reading.interface], last.key != budget.key, last.reading.index == reading.index,
               last.reading.bytes <= reading.bytes {
                ledgers[budget.key]?.counters[reading.interface] = LinkCounter(index: last.reading.index, bytes: last.reading.bytes)
            }
            lastReadings[reading.interface] = (budget?.key, reading)
            guard let budget else { continue }
            covered[budget.key, default: []].append(reading)
        }
        for budget in budgets {
            ledgers[budget.key]?.record(covered[budget.key] ?? [], bootID: bootID, at: time, period: budget.period, calendar: calendar,
                                        synchronized: synchronized)
        }
    }

    /// Counts a deleted link's last reading (`BudgetLedger.recordDeleted`) in the budget that covers it, if any.
    public mutating func recordDeleted(_ reading: CounterReading, bootID: String, at time: Timestamp, calendar: any LocalCalendar,
                                       synchronized: Bool = false) {
        guard let budget = budget(for: reading.interface, network: reading.network ?? lastReadings[reading.interface]?.reading.network) else {
            return
        }
        ledgers[budget.key]?.recordDeleted(reading, bootID: bootID, at: time, period: budget.period, calendar: calendar, synchronized: synchronized)
    }

    /// The standing of the budget of each of `interfaces` that has one, by interface name; `networks`: the SSID of
    /// the Wi-Fi network each link is on.
    public func statuses(of interfaces: some Sequence<String>, networks: [String: [UInt8]] = [:], at time: Timestamp,
                         calendar: any LocalCalendar, synchronized: Bool = false) -> [String: BudgetStatus] {
        var statuses: [String: BudgetStatus] = [:]
        for interface in interfaces {
            guard let budget = budget(for: interface, network: networks[interface]), let ledger = ledgers[budget.key] else { continue }
            statuses[interface] = ledger.status(of: budget, at: time, calendar: calendar, synchronized: synchronized)
        }
        return statuses
    }
}

/// Decides when budget standings go into the verdicts: at once when a state, limit, period or reset time
/// changes or a link gains or loses its budget; when only the used bytes moved, at most once per interval.
public struct BudgetRefreshRule: Hashable, Sendable {
    public let intervalNanoseconds: UInt64
    public private(set) var published: [String: BudgetStatus]?
    private var publishedAt: UInt64 = 0

    public init(intervalNanoseconds: UInt64 = 10_000_000_000) { self.intervalNanoseconds = intervalNanoseconds }

    /// Whether to publish `statuses` now (monotonic `now`); when true, they count as published.
    public mutating func shouldPublish(_ statuses: [String: BudgetStatus], now: UInt64) -> Bool {
        if let published {
            if published == statuses { return false }
            if published.mapValues(\.withoutCount) == statuses.mapValues(\.withoutCount),
               now &- publishedAt < intervalNanoseconds { return false }
        }
        published = statuses
        publishedAt = now
        return true
    }
}
