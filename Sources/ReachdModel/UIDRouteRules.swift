/// The uid ranges the policy rules select by (`ip rule add uidrange A-B …`, `FRA_UID_RANGE`): two users whose uids
/// lie in the same ranges get the same routes from the kernel, so a host verdict judged for one holds for the other.
/// Without such rules every user's routes are the same, and no lookup needs a uid. Pure.
public struct UIDRouteRules: Hashable, Sendable {
    /// The distinct ranges of every rule that has one, sorted.
    public let ranges: [ClosedRange<UInt32>]

    public init(ranges: some Sequence<ClosedRange<UInt32>> = []) {
        self.ranges = Set(ranges).sorted { ($0.lowerBound, $0.upperBound) < ($1.lowerBound, $1.upperBound) }
    }

    /// Whether the kernel routes `uid`'s packets as `other`'s: every rule's range holds both or neither.
    public func sameRoutes(_ uid: UInt32, as other: UInt32) -> Bool {
        ranges.allSatisfy { $0.contains(uid) == $0.contains(other) }
    }
}
