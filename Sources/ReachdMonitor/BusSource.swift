import Logging
import ReachdSystem

/// A service followed on a bus into the snapshot (NetworkManager's metered flags, ModemManager's roaming
/// links): what `start(on:merger:logger:)` needs to start any of them the same way.
package protocol BusSource: AnyObject {
    /// What the service publishes: a map of interface name to its value.
    associatedtype Reading: Sendable
    /// The service as warnings name it.
    static var serviceName: String { get }
    /// What the daemon does without the service, as warnings say it.
    static var withoutService: String { get }
    /// Where each new reading goes: `merger`'s part for this service.
    static func merging(into merger: SnapshotMerger) -> @Sendable (Reading) -> Void
    /// Connects to `bus` and subscribes; `onChange` gets every new reading (on the bus thread).
    init(bus: Bus, logger: Logger, onChange: @escaping @Sendable (Reading) -> Void) throws
    /// Starts the bus thread (and reads the service once).
    func start() throws
}

extension BusSource {
    /// Follows the service on `which` bus into `merger`; nil for `.none`, or (with a warning) when that bus
    /// cannot be used.
    package static func start(on which: Bus, merger: SnapshotMerger, logger: Logger) -> Self? {
        guard which != .none else { return nil }
        do {
            let source = try Self(bus: which, logger: logger, onChange: merging(into: merger))
            try source.start()
            return source
        } catch {
            logger.warning("\(serviceName): the \(which.rawValue) bus cannot be used (\(error)); \(withoutService)")
            return nil
        }
    }
}
