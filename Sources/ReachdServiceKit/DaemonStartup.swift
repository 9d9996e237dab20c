import Logging
import ReachdConfig

/// What reachd and reachd-transfers do first: logging to stderr, then the configuration file.
package enum DaemonStartup {
    /// Logs to stderr (swift-log's stream handler) at `level` and above.
    package static func bootstrapLogging(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    /// The configuration at `path` (none: the defaults); nil after logging why it cannot be used.
    package static func configuration(at path: String?, logger: Logger) -> Configuration? {
        do {
            return try path.map(Configuration.load(path:)) ?? Configuration()
        } catch let error as ConfigurationError {
            logger.critical("configuration: \(error.message)")
        } catch {
            logger.critical("configuration: \(error)")
        }
        return nil
    }
}
