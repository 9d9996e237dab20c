import ReachdModel
import ReachdServiceKit
import ReachdSystem

extension BusMessage {
    /// The host verdict as `a{sv}`.
    static func dictionary(of stamped: StampedVerdict) -> Dictionary {
        let verdict = stamped.verdict
        return [
            ("Target", .string(verdict.target)),
            ("Reachable", .bool(verdict.reachable)),
            ("Status", .string(verdict.status.rawValue)),
            ("Metered", .bool(verdict.metered)),
            ("MeteredReason", .string(verdict.meteredReason ?? "")),
            ("MeteredState", .string(verdict.meteredState.rawValue)),
            ("MeteredSource", .string(verdict.meteredSource?.rawValue ?? "")),
            ("Interface", .string(verdict.interface ?? "")),
            ("Flags", .strings(verdict.flags.names)),
            ("Reason", .string(verdict.reason ?? "")),
            ("ReasonCode", .string(verdict.reasonCode?.rawValue ?? "")),
            ("Addresses", .strings((verdict.addresses ?? []).map(\.description))),
            ("Sequence", .uint64(stamped.sequence)),
            // The data budget of the host's link (issue 33), as the properties have it.
            ("BudgetState", .string(verdict.budget?.state.rawValue ?? "")),
            ("BudgetUsedBytes", .int64(verdict.budget.map { Int64(clamping: $0.usedBytes) } ?? -1)),
            ("BudgetLimitBytes", .int64(verdict.budget.map { Int64(clamping: $0.limitBytes) } ?? -1)),
            ("BudgetPeriod", .string(verdict.budget?.period ?? "")),
            ("Roaming", .bool(verdict.roaming)),
            ("RoamingSource", .string(verdict.roamingSource?.rawValue ?? "")),
            ("Cost", .string(verdict.cost?.level.rawValue ?? "")),
            ("CostFlags", .strings(verdict.cost?.flagNames ?? [])),
            ("WifiNetwork", .string(verdict.wifiNetwork?.name ?? "")),
            ("WifiBSSID", .string(verdict.wifiNetwork?.bssidText ?? "")),
        ]
    }
}
