import ReachdModel

/// Whether the route to a job's server lets it run now (the seeds' rule: large transfers wait for an
/// unmetered route unless the user allowed metered use; small ones run anywhere reachable). Behind a captive
/// portal that holds the client (RFC 8908 `captive`) every transfer waits; a portal's byte allowance
/// (`bytes-remaining`) counts as a metered route.
public struct TransferGate: Hashable, Sendable {
    /// Transfers larger than this many bytes (or of unknown size) are large.
    public var meteredThreshold: Int64

    public init(meteredThreshold: Int64 = 10 * 1024 * 1024) {
        self.meteredThreshold = meteredThreshold
    }

    public enum Decision: Hashable, Sendable {
        case run
        /// Wait; the reason names what would unblock the job.
        case wait(reason: String)
        /// Metered route and the size is unknown: ask the server for the size (HEAD) before deciding.
        case needSize
        /// The job's constraints end it (its deadline passed, as its owner chose).
        case fail(reason: String)
    }

    /// Large: bigger than the threshold, or of unknown size.
    public func isLarge(_ size: Int64?) -> Bool {
        guard let size else { return true }
        return size > meteredThreshold
    }

    /// The decision for a job whose host has `verdict`; `size` is the whole file's size when known,
    /// `sizeChecked` says the server was already asked (unknown after asking counts as large).
    public func decide(host: String, verdict: Verdict?, size: Int64?, sizeChecked: Bool, allowMetered: Bool) -> Decision {
        guard let verdict else { return .wait(reason: "deferred: route to \(host) not known yet") }
        guard verdict.reachable else {
            let why = verdict.reason.map { " (\($0))" } ?? ""
            return .wait(reason: "deferred: \(host) is not reachable\(why); waits for a route to it")
        }
        if let portal = verdict.captivePortal, portal.captive == true {
            let page = portal.status?.userPortalURL ?? portal.apiURL
            return .wait(reason: "deferred: route to \(host) is held by a captive portal (\(page.terminalSafe)); waits until it lets traffic through")
        }
        let limited = verdict.captivePortal?.status?.bytesRemaining != nil
        guard verdict.metered || limited, !allowMetered else { return .run }
        if size == nil && !sizeChecked { return .needSize }
        guard isLarge(size) else { return .run }
        let via = verdict.interface.map { " (\($0))" } ?? ""
        let what = size.map { "\($0) bytes exceed the metered threshold of \(meteredThreshold)" } ?? "size unknown"
        let route = verdict.metered ? "is metered" : "has a captive portal's byte allowance"
        return .wait(reason: "deferred: route to \(host) \(route)\(via), \(what); waits for an unmetered route or --allow-metered")
    }
}
