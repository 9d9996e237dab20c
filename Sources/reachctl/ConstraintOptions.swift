import ArgumentParser
import ReachdTransferModel

/// The constraints `download add` and `upload add` take (docs/transfers.md, "Constraints").
struct ConstraintOptions: ParsableArguments {
    @Option(help: "What the route may cost, a comma-separated list: any, unmetered (small transfers wait too), not-roaming, within-budget (what is left to move must fit the link's data budget). Any of them but unmetered allows a metered route (within-budget only where the link's budget is known). Default: large transfers wait for an unmetered route.")
    var network: String?

    @Option(help: "A comma-separated list: on-ac-power, battery-not-low, not-power-saver. A host without a battery, UPower or power-profiles-daemon satisfies them.")
    var power: String?

    @Option(help: "Wait until this time (RFC 3339, e.g. 2026-11-27T01:00:00+01:00).")
    var notBefore: String?

    @Option(help: "Run only inside this daily window of local time, HH:MM-HH:MM (e.g. 01:00-06:00; it may cross midnight).")
    var window: String?

    @Option(help: "A time (RFC 3339) after which --after-deadline applies.")
    var deadline: String?

    @Option(help: "Once the deadline has passed: relax (the route's cost no longer holds the job back) or fail.",
            completion: .list(JobConstraints.AfterDeadline.allCases.map(\.rawValue)))
    var afterDeadline: String?

    @Flag(help: "Wait while the destination's file system has less free space than the download still needs plus 64 MiB.")
    var storageNotLow = false

    @Flag(help: "User-initiated: skip every deferral (constraints and the metered rule); it still needs a route.")
    var now = false

    /// The constraints asked for, or the refusal naming the option at fault.
    func constraints() throws -> JobConstraints {
        var constraints = JobConstraints()
        let given: [(String, String, String?)] = [
            ("--network", "network", network), ("--power", "power", power), ("--not-before", "notBefore", notBefore),
            ("--window", "window", window), ("--deadline", "deadline", deadline), ("--after-deadline", "afterDeadline", afterDeadline),
            ("--storage-not-low", "storageNotLow", storageNotLow ? "true" : nil), ("--now", "now", now ? "true" : nil),
        ]
        for (option, key, value) in given {
            guard let value else { continue }
            if let refusal = constraints.set(key, to: value) { throw ValidationError("\(option): \(refusal)") }
        }
        if afterDeadline != nil && deadline == nil { throw ValidationError("--after-deadline needs --deadline") }
        return constraints
    }

    func validate() throws { _ = try constraints() }
}
