/// Why a target is not reachable, for programs (the verdict's `reason` says it for people, with names and
/// addresses). On the socket as `reasonCode`, on D-Bus as `ReasonCode`.
public enum ReasonCode: String, Hashable, Sendable, Codable, CaseIterable {
    /// Nothing has judged the target yet (a client of reachd with no verdict from it).
    case notJudged = "not-judged"
    /// The host name did not resolve.
    case notResolved = "not-resolved"
    /// The host has no address of this family.
    case noAddress = "no-address"
    /// No route leads there: no default route, or the kernel's lookup says ENETUNREACH.
    case noRoute = "no-route"
    /// The route there refuses traffic: `unreachable`, `prohibit`, `blackhole` or `throw`.
    case rejectingRoute = "rejecting-route"
    /// The kernel's route lookup failed for another reason.
    case lookupFailed = "lookup-failed"
    /// The route leaves on an interface reachd does not know.
    case unknownInterface = "unknown-interface"
    /// The route leaves on an interface the configuration ignores.
    case ignoredInterface = "ignored-interface"
    /// The interface is down, has no carrier or is not running.
    case interfaceNotOperational = "interface-not-operational"
    /// The interface has no (usable) source address for the destination.
    case noSourceAddress = "no-source-address"
}
