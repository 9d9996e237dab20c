import CSystemd
import ReachdModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One sd-bus connection served by a `PollThread` of its own, asleep on the bus and the thread's wake-up
/// pipe. sd-bus objects are not thread-safe: other threads hand work to the bus thread with `perform`.
package final class BusConnection: @unchecked Sendable {
    // Touched by init/stop on the caller's thread and by the bus thread in between.
    private var bus: OpaquePointer?
    private var slots: [OpaquePointer] = []
    private let thread: PollThread
    private let queue = Mutex<(work: [@Sendable (OpaquePointer) -> Void], closed: Bool)>(([], false))

    /// Connects to the system or the session bus (`DBUS_SESSION_BUS_ADDRESS`).
    package init(_ which: Bus) throws {
        var bus: OpaquePointer?
        let opened = which == .system ? sd_bus_open_system(&bus) : sd_bus_open_user(&bus)
        guard opened >= 0, let bus else { throw BusError(call: "sd_bus_open_\(which.rawValue)", code: opened) }
        do {
            thread = try PollThread()
        } catch {
            sd_bus_flush_close_unref(bus)
            throw BusError(call: error.call, errno: error.errno)
        }
        self.bus = bus
    }

    /// Exports an object before `start`: `add` registers it on the bus and returns its slot (kept until `stop`).
    package func export(_ add: (OpaquePointer, inout OpaquePointer?) -> Int32, what: String) throws {
        guard let bus else { throw BusError(call: what, code: -ENOTCONN) }
        var slot: OpaquePointer?
        let rc = add(bus, &slot)
        guard rc >= 0, let slot else { throw BusError(call: what, code: rc) }
        slots.append(slot)
    }

    /// Takes `name` with sd-bus's `flags` (`SD_BUS_NAME_*`); true when this connection owns it now, false when
    /// it waits in the name's queue (`SD_BUS_NAME_QUEUE`).
    @discardableResult
    package func requestName(_ name: String, flags: UInt64 = 0) throws -> Bool {
        guard let bus else { throw BusError(call: "sd_bus_request_name", code: -ENOTCONN) }
        let rc = sd_bus_request_name(bus, name, flags)
        guard rc >= 0 else { throw BusError(call: "sd_bus_request_name(\(name))", code: rc) }
        return rc > 0
    }

    /// Starts the bus thread.
    package func start() throws {
        guard let bus else { throw BusError(call: "start", code: -ENOTCONN) }
        do {
            try thread.start(descriptors: { [unowned self] in self.serve(bus) }, ready: { _ in })
        } catch {
            throw BusError(call: error.call, errno: error.errno)
        }
    }

    /// Stops the thread and closes the connection.
    package func stop() {
        queue.withLock { $0.closed = true }
        thread.stop()
        for slot in slots { sd_bus_slot_unref(slot) }
        slots = []
        if let bus { sd_bus_flush_close_unref(bus) }
        bus = nil
    }

    /// Runs `work` on the bus thread with the bus; false (and never run) once the connection is stopping.
    @discardableResult
    package func perform(_ work: @escaping @Sendable (OpaquePointer) -> Void) -> Bool {
        guard queue.withLock({ queue in
            if !queue.closed { queue.work.append(work) }
            return !queue.closed
        }) else { return false }
        thread.wake()
        return true
    }

    /// One round of the bus thread: handles what came in and what was handed over, sends, and says what to wait on.
    private func serve(_ bus: OpaquePointer) -> (fds: [pollfd], timeout: Int32) {
        while sd_bus_process(bus, nil) > 0 {}
        for work in queue.withLock({ pending -> [@Sendable (OpaquePointer) -> Void] in defer { pending.work = [] }; return pending.work }) {
            work(bus)
        }
        _ = sd_bus_flush(bus)
        var until: UInt64 = 0
        var timeout: Int32 = -1
        if sd_bus_get_timeout(bus, &until) > 0, until != UInt64.max {
            let now = MonotonicClock.microseconds()
            timeout = until <= now ? 0 : Int32(clamping: (until - now + 999) / 1_000)
        }
        return ([pollfd(fd: sd_bus_get_fd(bus), events: Int16(sd_bus_get_events(bus)), revents: 0)], timeout)
    }
}

/// An sd-bus failure with the call that failed.
package struct BusError: Error, CustomStringConvertible {
    package var call: String
    package var errno: Errno

    package init(call: String, errno: Errno) {
        self.call = call
        self.errno = errno
    }

    /// `call` returned `code`, sd-bus's negative errno.
    package init(call: String, code: Int32) { self.init(call: call, errno: Errno(-code)) }

    package var description: String { "\(call): \(errno)" }
}
