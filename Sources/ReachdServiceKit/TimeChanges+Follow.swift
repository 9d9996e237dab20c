import Logging
import ReachdSystem

extension TimeChanges: StartedComponent {
    /// Follows the wall clock and the local zone for a daemon: each change is logged, then handed to `onChange`
    /// (on the source's threads). nil, with a warning, where they cannot be followed.
    package static func follow(logger: Logger, onChange: @escaping @Sendable (Change) -> Void) -> TimeChanges? {
        do {
            let changes = try TimeChanges { change in
                switch change {
                case .clockSet: logger.info("the wall clock was set (a step, or a resume): times are planned again")
                case .zoneChanged: logger.info("the local time zone changed: times are planned again")
                }
                onChange(change)
            }
            try changes.start()
            return changes
        } catch {
            logger.warning("clock steps and time-zone changes cannot be followed (\(error)); times are planned again only at the next event")
            return nil
        }
    }
}
