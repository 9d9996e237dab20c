import Logging
import ServiceLifecycle

/// A daemon's long-lived parts in start order, run as one `ServiceGroup`: it starts them once every strict
/// start-up step (binding, loading) has succeeded and, at the first SIGTERM or SIGINT, shuts them down
/// gracefully, the last added first, each after the one added after it has stopped.
///
/// Parts whose start can fail are started before they are added (`add(started:)`); services that start in
/// their `run()` are added after the last strict step, so that a failed start never starts them.
package struct DaemonServices: Sendable {
    private var services: [any Service] = []
    private let logger: Logger

    package init(logger: Logger) { self.logger = logger }

    /// Runs a daemon: `start` takes the strict start-up steps, adding each part once started; a step that fails
    /// stops the parts added before it (a clear error at start, no thread left running) and its error is rethrown.
    /// Then the parts run until the first SIGTERM or SIGINT (`ShutdownSignals`).
    package static func run(logger: Logger, start: (inout DaemonServices) async throws -> Void) async throws {
        var services = DaemonServices(logger: logger)
        do {
            try await start(&services)
        } catch {
            await services.shutDown()
            throw error
        }
        try await services.run(until: ShutdownSignals.received())
        logger.info("stopped")
    }

    /// Adds `service` after the ones added so far: it is shut down before them.
    package mutating func add(_ service: any Service) { services.append(service) }

    /// Adds a component already started, as the service that stops it at shutdown.
    package mutating func add(started component: some StartedComponent) { add(ComponentService(component)) }

    /// Runs every part until the first of `signals` (`ShutdownSignals.received()`), or until a part fails (the
    /// error is rethrown), then shuts them down, the last added first.
    package func run(until signals: AsyncStream<Int32>) async throws {
        let signal = ShutdownSignalService(signals: signals, logger: logger)
        try await group(first: .init(service: signal, successTerminationBehavior: .gracefullyShutdownGroup)).run()
    }

    /// Stops the parts added so far, the last added first, without a signal: a start-up step failed.
    package func shutDown() async {
        try? await group(first: .init(service: ShutDownAtOnce(), successTerminationBehavior: .gracefullyShutdownGroup)).run()
    }

    /// The parts after `first`, which shuts the group down when it returns; a part that throws shuts it down too
    /// (the error is rethrown once all have stopped). The group traps no signal itself:
    /// `ShutdownSignals` takes them with `sigwait` on the main thread (a dispatch signal source would start
    /// libdispatch, whose worker-pool monitor wakes an idle daemon every second).
    private func group(first: ServiceGroupConfiguration.ServiceConfiguration) -> ServiceGroup {
        ServiceGroup(configuration: .init(services: [first] + services.map { .init(service: $0, failureTerminationBehavior: .gracefullyShutdownGroup) }, logger: logger))
    }
}

/// Returns at once, which shuts its group down.
private struct ShutDownAtOnce: Service {
    func run() async {}
}
