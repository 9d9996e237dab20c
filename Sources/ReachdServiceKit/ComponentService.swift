import ServiceLifecycle

/// Something a daemon starts before its service group runs (a bound socket, a thread, a bus connection) and
/// stops when the group shuts down.
package protocol StartedComponent: Sendable {
    /// Stops it; called once, when its group shuts down (gracefully, or cancelled).
    func stop() async
}

/// Keeps a started component while its group runs, and stops it at graceful shutdown (or cancellation).
package struct ComponentService<Component: StartedComponent>: Service, CustomStringConvertible {
    private let component: Component

    package init(_ component: Component) { self.component = component }

    package func run() async {
        try? await gracefulShutdown()
        await component.stop()
    }

    package var description: String { "\(Component.self)" }
}
