import Logging

/// Which D-Bus bus a service uses (`--bus`, `--networkmanager`): the system bus, the session bus
/// (`DBUS_SESSION_BUS_ADDRESS`), or none.
public enum Bus: String, Sendable, CaseIterable {
    case system, session, none
}

extension Bus {
    /// A daemon's D-Bus service `name` on this bus, from `start`; nil for `none`, and (with one warning) when the
    /// bus is not there or the name cannot be had: the daemon's socket serves without it.
    package func serve<Service>(_ name: String, logger: Logger, start: () async throws -> Service) async -> Service? {
        guard self != .none else { return nil }
        do {
            let service = try await start()
            logger.info("D-Bus: \(name) on the \(rawValue) bus")
            return service
        } catch {
            logger.warning("D-Bus: the \(rawValue) bus cannot be used (\(error)); continuing without it")
            return nil
        }
    }
}
