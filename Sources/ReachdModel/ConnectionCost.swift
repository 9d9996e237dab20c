/// The cost level of a path, in the words of Windows' Network List Manager (`NLM_CONNECTION_COST`).
public enum CostLevel: String, Hashable, Sendable, Codable, CaseIterable {
    /// Neither metered, nor capped, nor roaming: use it freely.
    case unrestricted
    /// Metered or capped: use is free up to a limit (a metered link, or one with a `[[budget]]`).
    case fixed
    /// Charged by the byte: a roaming link.
    case variable
}

/// The cost of a path as one machine-readable value (issue 33): the level and the flags NLM has beside it.
///
/// | input | level | flags |
/// | --- | --- | --- |
/// | roaming (any metered state, any budget) | variable | roaming, plus the budget's flag |
/// | metered (`yes`, `guess-yes`), not roaming | fixed | the budget's flag |
/// | not metered, with a budget, not roaming | fixed | the budget's flag |
/// | not metered, no budget, not roaming | unrestricted | none |
///
/// The budget's flag is `approachingDataLimit` for a budget `approaching` its limit, `overDataLimit` for one
/// `over` it (never both), none for `below`.
public struct ConnectionCost: Hashable, Sendable {
    public var level: CostLevel
    /// The link is a modem registered on a visited network.
    public var roaming: Bool
    /// The link's data budget is at or above its approaching share, below the limit.
    public var approachingDataLimit: Bool
    /// The link's data budget is at or above its limit.
    public var overDataLimit: Bool

    public init(level: CostLevel, roaming: Bool = false, approachingDataLimit: Bool = false, overDataLimit: Bool = false) {
        self.level = level
        self.roaming = roaming
        self.approachingDataLimit = approachingDataLimit
        self.overDataLimit = overDataLimit
    }

    /// The cost of a reachable path from its metered state, whether it roams and its budget's state (table above).
    public init(meteredState: MeteredState, roaming: Bool, budget: BudgetState?) {
        let level: CostLevel = roaming ? .variable : meteredState.isMetered || budget != nil ? .fixed : .unrestricted
        self.init(level: level, roaming: roaming, approachingDataLimit: budget == .approaching, overDataLimit: budget == .over)
    }

    /// Every flag's name, in NLM's order.
    public static let allFlagNames = ["roaming", "approachingDataLimit", "overDataLimit"]

    /// The flags that are set, by name, in NLM's order: `roaming`, `approachingDataLimit`, `overDataLimit`.
    public var flagNames: [String] {
        zip([roaming, approachingDataLimit, overDataLimit], Self.allFlagNames).filter(\.0).map(\.1)
    }

    /// What faces with one word for cost (NetworkManager's `Metered`, GLib's `network-metered`) call metered:
    /// a metered link, and also a roaming one or one over its data budget.
    public static func countsAsMetered(meteredState: MeteredState, roaming: Bool, budget: BudgetState?) -> Bool {
        meteredState.isMetered || roaming || budget == .over
    }
}

extension Verdict {
    /// The path's cost (`ConnectionCost`); nil when not reachable.
    public var cost: ConnectionCost? {
        reachable ? ConnectionCost(meteredState: meteredState, roaming: roaming, budget: budget?.state) : nil
    }

    /// Whether the path's link roams (`roamingSource` says who said so).
    public var roaming: Bool { roamingSource != nil }
}
