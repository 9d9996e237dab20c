import ReachdModel

/// Whether a route's link roams, and who says so (ModemManager's 3GPP registration state).
public struct RoamingFact: Hashable, Sendable {
    public var roaming: Bool
    public var link: String
    public var source: String

    public init(roaming: Bool, link: String, source: String) {
        self.roaming = roaming
        self.link = link
        self.source = source
    }

    /// What `verdict` says of its link's roaming; nil without a verdict or a link (which satisfies `not-roaming`).
    public init?(verdict: Verdict?) {
        guard let verdict, let link = verdict.interface else { return nil }
        self.init(roaming: verdict.roamingSource != nil, link: link, source: verdict.roamingSource?.rawValue ?? "")
    }
}

/// The host's power as UPower and power-profiles-daemon tell it; nil where a service is not there (which
/// satisfies every power constraint).
public struct PowerFacts: Hashable, Sendable {
    /// UPower's `OnBattery`.
    public var onBattery: Bool?
    /// The display device's `Percentage` (0 to 100); nil without a battery.
    public var batteryPercent: Double?
    /// The display device's `WarningLevel`: 3 low, 4 critical, 5 action.
    public var warningLevel: UInt32?
    /// power-profiles-daemon's `ActiveProfile`.
    public var profile: String?

    public init(onBattery: Bool? = nil, batteryPercent: Double? = nil, warningLevel: UInt32? = nil, profile: String? = nil) {
        self.onBattery = onBattery
        self.batteryPercent = batteryPercent
        self.warningLevel = warningLevel
        self.profile = profile
    }

    /// On battery, and the battery low: UPower warns (level 3 or more) or it holds less than `lowBatteryPercent`.
    public var batteryLow: Bool {
        guard onBattery == true else { return false }
        return (warningLevel.map { (3...5).contains($0) } ?? false) || (batteryPercent.map { $0 < TransferGate.lowBatteryPercent } ?? false)
    }
}

/// The facts beside the verdict that a job's constraints weigh.
public struct GateFacts: Hashable, Sendable {
    public var power: PowerFacts
    /// Free bytes on the file system of the job's destination; nil when not known (satisfies `storageNotLow`).
    public var freeBytes: Int64?
    /// The route's roaming; nil when not known (satisfies `not-roaming`).
    public var roaming: RoamingFact?
    /// Why the destination's free space is not known yet (`storageNotLow` waits): its file system is being read; or
    /// why every download there waits: its file system does not answer (a look, or a write, that has not returned).
    public var destination: DestinationWait?
    /// Bytes of the route's link budget promised to other running `within-budget` jobs (what they still have to
    /// move) and moved by the queue's jobs: what the budget's count does not hold yet.
    public var budgetReserved: UInt64 = 0
    /// While the wall clock cannot be trusted yet (`ClockTrust`): the latest time the job table holds, which the
    /// clock reads before. Jobs with times (not-before, a window, a deadline) wait.
    public var clockBehind: Timestamp?

    public init(power: PowerFacts = PowerFacts(), freeBytes: Int64? = nil, roaming: RoamingFact? = nil, destination: DestinationWait? = nil,
                clockBehind: Timestamp? = nil) {
        self.power = power
        self.freeBytes = freeBytes
        self.roaming = roaming
        self.destination = destination
        self.clockBehind = clockBehind
    }
}

/// Why a destination's free space is not known (`GateFacts.destination`).
public enum DestinationWait: Hashable, Sendable {
    case reading
    /// Its file system has not answered: a look for `DestinationLooks.answerSeconds`, or a write (the directory).
    case notAnswering(String)
}

/// A job's constraints weighed against its route, the facts and the clock.
extension TransferGate {
    /// On battery below this share, the battery is low.
    public static let lowBatteryPercent = 15.0
    /// `storageNotLow`: the free space a download must leave beside what it still needs.
    public static let storageMarginBytes: Int64 = 64 * 1024 * 1024
    /// While a job asks for free space, its file system is looked at again this often.
    public static let storagePollSeconds: Int64 = 30

    /// The decision for `job` on `route` at `now`: reachability first (always needed), then `now` (skips the rest),
    /// the deadline, time, power, storage and the network's cost (its constraints, or without any the metered rule).
    /// `size` is the whole file's size when known, `sizeChecked` says the server was already asked.
    public func decide(job: Job, route: JobRoute, size: Int64?, sizeChecked: Bool, now: Timestamp, zone: any LocalTimeZone) -> Decision {
        let reach = decide(host: route.host, verdict: route.verdict, size: size, sizeChecked: sizeChecked, allowMetered: true)
        guard reach == .run, let verdict = route.verdict else { return reach }
        let asked = job.constraints
        // A file system that does not answer holds every download there, `now` or not: each would take a thread for good.
        if !job.isUpload, let destination = route.facts.destination, case .notAnswering = destination { return .wait(reason: Self.text(destination)) }
        if asked.now { return .run }
        if let behind = route.facts.clockBehind, asked.notBefore != nil || asked.window != nil || asked.deadline != nil {
            return .wait(reason: "waiting: the clock is not set yet (it reads before the job table's last change, \(behind))")
        }
        var relaxed = false
        if let deadline = asked.deadline, now >= deadline {
            if asked.afterDeadline == .fail {
                return .fail(reason: "failed: its deadline (\(LocalClockText.text(deadline, now: now, zone: zone))) passed before it completed")
            }
            relaxed = true
        }
        if let wait = timeWait(asked, now: now, zone: zone) ?? powerWait(asked, route.facts.power) { return .wait(reason: wait) }
        if asked.storageNotLow, !job.isUpload, let destination = route.facts.destination { return .wait(reason: Self.text(destination)) }
        if asked.storageNotLow, !job.isUpload, route.facts.freeBytes != nil, size == nil, !sizeChecked { return .needSize }
        if let wait = storageWait(job, size: size, free: route.facts.freeBytes) { return .wait(reason: wait) }
        if relaxed { return .run }
        guard !asked.network.isEmpty else {
            return decide(host: route.host, verdict: verdict, size: size, sizeChecked: sizeChecked, allowMetered: job.allowMetered)
        }
        if asked.network.contains(.notRoaming), let roaming = route.facts.roaming, roaming.roaming {
            return .wait(reason: "waiting: roaming on \(roaming.link) (\(roaming.source))")
        }
        if asked.network.contains(.unmetered), verdict.metered || verdict.captivePortal?.status?.bytesRemaining != nil {
            let via = verdict.interface.map { " (\($0))" } ?? ""
            return .wait(reason: "waiting: route to \(route.host) is metered\(via); the job asks for an unmetered one")
        }
        if asked.network.contains(.withinBudget), verdict.budget == nil, !asked.network.contains(.any) {
            // No budget known for the route: its use is unknown, which never weakens the metered rule.
            return decide(host: route.host, verdict: verdict, size: size, sizeChecked: sizeChecked, allowMetered: job.allowMetered)
        }
        if asked.network.contains(.withinBudget), let budget = verdict.budget {
            let used = budgetText(budget, link: verdict.interface)
            if budget.state == .over { return .wait(reason: "waiting: \(used)") }
            guard let size else { return sizeChecked ? .wait(reason: "waiting: size unknown, so it may not fit the budget; \(used)") : .needSize }
            let still = UInt64(max(0, size - job.bytesMoved)), reserved = route.facts.budgetReserved
            let left = budget.limitBytes - min(budget.usedBytes, budget.limitBytes)
            if still > left - min(reserved, left) {
                let promised = reserved == 0 ? "" : ", \(Self.decimal(reserved, like: budget.limitBytes)) more not counted yet (moved, or promised to running jobs)"
                return .wait(reason: "waiting: \(used)\(promised); the job needs \(Self.decimal(still, like: budget.limitBytes)) more")
            }
        }
        return .run
    }

    /// When the decision for `job` may change with the clock alone: not-before, the window's next edge, the
    /// deadline, the next look at the free space; nil when never.
    public func nextTimeEdge(job: Job, now: Timestamp, zone: any LocalTimeZone) -> Timestamp? {
        let asked = job.constraints
        guard !asked.now else { return nil }
        var edges = [asked.notBefore, asked.deadline].compactMap { $0 }.filter { $0 > now }
        if let window = asked.window { edges.append(window.nextEdge(after: now, zone: zone)) }
        if asked.storageNotLow && !job.isUpload { edges.append(Timestamp(microseconds: now.microseconds + Self.storagePollSeconds * 1_000_000)) }
        return edges.min()
    }

    private func timeWait(_ asked: JobConstraints, now: Timestamp, zone: any LocalTimeZone) -> String? {
        if let notBefore = asked.notBefore, now < notBefore { return "waiting until \(LocalClockText.text(notBefore, now: now, zone: zone))" }
        if let window = asked.window, !window.contains(now, zone: zone) {
            return "waiting until \(LocalClockText.text(window.nextEdge(after: now, zone: zone), now: now, zone: zone)) (window \(window))"
        }
        return nil
    }

    private func powerWait(_ asked: JobConstraints, _ power: PowerFacts) -> String? {
        let percent = power.batteryPercent.map { ", \(Int($0.rounded())) %" } ?? ""
        if asked.power.contains(.onACPower), power.onBattery == true { return "waiting: on battery\(percent)" }
        if asked.power.contains(.batteryNotLow), power.batteryLow { return "waiting: battery low\(percent)" }
        if asked.power.contains(.notPowerSaver), power.profile == "power-saver" { return "waiting: power profile is power-saver" }
        return nil
    }

    private func storageWait(_ job: Job, size: Int64?, free: Int64?) -> String? {
        guard job.constraints.storageNotLow, !job.isUpload, let free else { return nil }
        let still = max(0, (size ?? job.bytesTotal ?? 0) - job.bytesMoved)
        let needed = still > Int64.max - Self.storageMarginBytes ? Int64.max : still + Self.storageMarginBytes
        guard free < needed else { return nil }
        let unit = UInt64(max(needed, 1))
        return "waiting: \(Self.decimal(UInt64(max(0, free)), like: unit)) free at the destination, the job needs \(Self.decimal(UInt64(still), like: unit)) more and leaves \(Self.decimal(UInt64(Self.storageMarginBytes), like: unit))"
    }

    private static func text(_ destination: DestinationWait) -> String {
        switch destination {
        case .reading: "waiting: reading the free space at the destination"
        case .notAnswering(let directory): "waiting: the file system of \(directory) does not answer"
        }
    }

    /// `4.6 of 5.0 GB used on wwan0 this month`.
    private func budgetText(_ budget: BudgetStatus, link: String?) -> String {
        let period = switch budget.period {
        case "day": "today"
        case "week": "this week"
        default: "this month"
        }
        let on = link.map { " on \($0)" } ?? ""
        return "\(Self.decimal(budget.usedBytes, like: budget.limitBytes, unit: false)) of \(Self.decimal(budget.limitBytes, like: budget.limitBytes)) used\(on) \(period)"
    }

    /// `bytes` in the decimal unit that suits `scale` (kB, MB, GB, TB), one decimal: `4.6 GB`.
    static func decimal(_ bytes: UInt64, like scale: UInt64, unit: Bool = true) -> String {
        let units: [(UInt64, String)] = [(1_000_000_000_000, "TB"), (1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "kB")]
        guard let (size, name) = units.first(where: { scale >= $0.0 }) else { return unit ? "\(bytes) B" : "\(bytes)" }
        let tenths = (bytes / size) * 10 + (bytes % size) * 10 / size
        return "\(tenths / 10).\(tenths % 10)" + (unit ? " \(name)" : "")
    }
}
