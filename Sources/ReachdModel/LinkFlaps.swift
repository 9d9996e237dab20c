/// Counts carrier losses per interface from successive snapshots (a link that had carrier and lost it, or
/// went away with it), for the metrics. Interface names beyond `limit` are counted as `other`, so that
/// veth churn cannot grow the label set without bound.
public struct LinkFlaps: Hashable, Sendable {
    public static let other = "other"
    private var hadCarrier: [String: Bool] = [:]
    private var named: Set<String> = []
    private let limit: Int

    public init(limit: Int = 64) { self.limit = limit }

    /// The interfaces (by label) that lost carrier since the last snapshot.
    public mutating func record(_ snapshot: NetworkSnapshot) -> [String] {
        var now: [String: Bool] = [:]
        for link in snapshot.links.values where !link.flags.contains(.loopback) { now[link.name] = link.hasCarrier }
        var lost: [String] = []
        for (name, up) in hadCarrier.sorted(by: { $0.key < $1.key }) where up && now[name] != true { lost.append(label(name)) }
        hadCarrier = now
        return lost.sorted()
    }

    private mutating func label(_ name: String) -> String {
        if named.contains(name) { return name }
        guard named.count < limit else { return Self.other }
        named.insert(name)
        return name
    }
}
