import CSystemd
import Logging
import ReachdServiceKit
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// logind's sleep for the queue, as logind's delay inhibitors are meant to be used: a `delay` inhibitor of
/// `sleep` is held while the machine is awake, so that at `PrepareForSleep(true)` the scheduler stops the running
/// transfers (their partial files flushed) before the inhibitor is let go and the machine sleeps; at
/// `PrepareForSleep(false)` a new one is taken and the queue goes on, as it does when logind's name changes owner.
/// Where logind is not there, nothing is held (it is taken when the name gets an owner).
final class SleepSource: StartedComponent, @unchecked Sendable {
    static let login = "org.freedesktop.login1"
    static let path = "/org/freedesktop/login1"
    static let manager = "org.freedesktop.login1.Manager"

    private let connection: BusConnection
    private let onSleep: @Sendable (Bool) -> Void
    private let logger: Logger
    /// The inhibitor's descriptor, -1 for none. Only touched on the bus thread, and by `stop` after it ended.
    private var inhibitor: Int32 = -1
    /// Between `PrepareForSleep(true)` and `(false)` (bus thread): only then is the inhibitor let go.
    private var goingToSleep = false
    /// The task that hands sleep and resume to the scheduler; set once at start.
    private var intake: Task<Void, Never>?

    /// Connects and subscribes; `onSleep` gets `PrepareForSleep`'s argument (on the bus thread).
    init(bus: Bus, logger: Logger, onSleep: @escaping @Sendable (Bool) -> Void) throws {
        connection = try BusConnection(bus)
        self.onSleep = onSleep
        self.logger = logger
        let context = Unmanaged.passUnretained(self).toOpaque()
        let rules: [(String, sd_bus_message_handler_t)] = [
            ("type='signal',sender='\(Self.login)',path='\(Self.path)',interface='\(Self.manager)',member='PrepareForSleep'", sleepSignal),
            ("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.login)'", loginOwnerSignal),
        ]
        do {
            for (rule, handler) in rules {
                try connection.export({ bus, slot in sd_bus_add_match(bus, &slot, rule, handler, context) }, what: "sd_bus_add_match")
            }
        } catch {
            connection.stop()
            throw error
        }
    }

    /// Starts the bus thread and takes the inhibitor.
    func start() throws {
        try connection.start()
        connection.perform { [self] bus in inhibit(bus) }
    }

    func stop() async {
        connection.stop()
        intake?.cancel()
        if inhibitor >= 0 { close(inhibitor) }
        inhibitor = -1
    }

    /// Lets the machine sleep: the inhibitor is closed, unless the machine is awake again by now (a resume, or
    /// logind started anew, came first: the inhibitor held then is the one to keep).
    func release() {
        connection.perform { [self] _ in
            guard goingToSleep, inhibitor >= 0 else { return }
            close(inhibitor)
            inhibitor = -1
        }
    }

    /// Follows logind's sleep on `which` bus into `scheduler`, or nil (with a warning) when that bus cannot be used.
    static func start(on which: Bus, scheduler: TransferScheduler, logger: Logger) -> SleepSource? {
        guard which != .none else { return nil }
        do {
            let (changes, sink) = AsyncStream.makeStream(of: Bool.self)
            let source = try SleepSource(bus: which, logger: logger) { sink.yield($0) }
            try source.start()
            source.intake = Task {
                for await sleeping in changes {
                    if sleeping {
                        await scheduler.machineSleeps()
                        source.release()
                    } else {
                        await scheduler.machineResumed()
                    }
                }
            }
            return source
        } catch {
            logger.warning("sleep: the \(which.rawValue) bus cannot be used (\(error)); transfers are not stopped before the machine sleeps")
            return nil
        }
    }

    /// `Inhibit("sleep", …, "delay")`, unless one is held.
    private func inhibit(_ bus: OpaquePointer) {
        guard inhibitor < 0 else { return }
        var call: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &call, Self.login, Self.path, Self.manager, "Inhibit") >= 0, let call else { return }
        defer { sd_bus_message_unref(call) }
        for argument in ["sleep", "reachd-transfers", "stopping transfers before the machine sleeps", "delay"] {
            guard argument.withCString({ sd_bus_message_append_basic(call, CChar(UInt8(ascii: "s")), $0) }) >= 0 else { return }
        }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        guard sd_bus_call(bus, call, 5_000_000, &error, &reply) >= 0, let reply else {
            logger.debug("sleep: no inhibitor from logind (\(error.name.map { String(cString: $0) } ?? "no answer"))")
            return
        }
        defer { sd_bus_message_unref(reply) }
        var fd: Int32 = -1
        guard sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "h")), &fd) > 0, fd >= 0 else { return }
        // The message owns its descriptor: a copy of ours is kept.
        inhibitor = fcntl(fd, F_DUPFD_CLOEXEC, 3)
    }

    fileprivate func prepareForSleep(_ message: OpaquePointer) {
        var sleeping: Int32 = 0
        guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "b")), &sleeping) > 0 else { return }
        goingToSleep = sleeping != 0
        if sleeping == 0, let bus = sd_bus_message_get_bus(message) { inhibit(bus) }
        onSleep(sleeping != 0)
    }

    fileprivate func loginOwnerChanged(_ message: OpaquePointer) {
        var name: UnsafePointer<CChar>?, old: UnsafePointer<CChar>?, new: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &name) > 0,
              sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &old) > 0,
              sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &new) > 0, let new else { return }
        goingToSleep = false
        if inhibitor >= 0 {
            close(inhibitor)
            inhibitor = -1
        }
        if new.pointee != 0, let bus = sd_bus_message_get_bus(message) { inhibit(bus) }
        // A sleep logind announced cannot outlive logind: the queue goes on (nothing happens when it was awake).
        onSleep(false)
    }
}

private let sleepSignal: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<SleepSource>.fromOpaque(context).takeUnretainedValue().prepareForSleep(message)
    return 0
}

private let loginOwnerSignal: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<SleepSource>.fromOpaque(context).takeUnretainedValue().loginOwnerChanged(message)
    return 0
}
