extension Configuration {
    /// The most connections a `[connections]` value may allow: far beyond any descriptor limit, small enough
    /// that the daemon's counters cannot overflow.
    static let maximumConnections: Int64 = 1_000_000

    /// `[connections] per_user` and `total`: the limits of reachd's socket, each 1 to 1000000, `total` at
    /// least `per_user` (when both are set).
    mutating func readConnections(_ value: TOMLValue?) throws {
        guard let value else { return }
        guard let section = value.table else { throw ConfigurationError("\"connections\" must be a table: write [connections]") }
        for key in section.keys where !["per_user", "total"].contains(key) {
            throw ConfigurationError("connections: unknown key \"\(key)\" (known: per_user, total)")
        }
        func count(_ key: String) throws -> Int? {
            guard let value = section[key] else { return nil }
            guard let count = value.integer, (1...Self.maximumConnections).contains(count) else {
                throw ConfigurationError("connections: \"\(key)\" must be 1 to \(Self.maximumConnections)")
            }
            return Int(count)
        }
        connectionsPerUser = try count("per_user")
        connections = try count("total")
        if let perUser = connectionsPerUser, let total = connections, total < perUser {
            throw ConfigurationError("connections: \"total\" (\(total)) must be at least \"per_user\" (\(perUser))")
        }
    }
}
