import CSystemd
import ReachdNetlink
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One sd-bus connection served by a thread of its own, asleep in `poll(2)` on the bus and a wake-up
/// pipe. sd-bus objects are not thread-safe: other threads hand work to the bus thread with `perform`.
package final class BusConnection: @unchecked Sendable {
    // Touched by init/stop on the caller's thread and by the bus thread in between.
    private var bus: OpaquePointer?
    private var slots: [OpaquePointer] = []
    private var thread: pthread_t?
    private var wakePipe: (read: Int32, write: Int32) = (-1, -1)
    private let queue = Mutex<[@Sendable (OpaquePointer) -> Void]>([])
    private let stopping = Atomic<Bool>(false)

    /// Connects to the system or the session bus (`DBUS_SESSION_BUS_ADDRESS`).
    package init(_ which: BusService.Bus) throws {
        var bus: OpaquePointer?
        let opened = which == .system ? sd_bus_open_system(&bus) : sd_bus_open_user(&bus)
        guard opened >= 0, let bus else { throw BusError(call: "sd_bus_open_\(which.rawValue)", code: opened) }
        self.bus = bus
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { close(); throw BusError(call: "pipe", code: -errno) }
        wakePipe = (fds[0], fds[1])
    }

    /// Exports an object before `start`: `add` registers it on the bus and returns its slot (kept until `stop`).
    package func export(_ add: (OpaquePointer, inout OpaquePointer?) -> Int32, what: String) throws {
        guard let bus else { throw BusError(call: what, code: -ENOTCONN) }
        var slot: OpaquePointer?
        let rc = add(bus, &slot)
        guard rc >= 0, let slot else { throw BusError(call: what, code: rc) }
        slots.append(slot)
    }

    package func requestName(_ name: String) throws {
        guard let bus else { throw BusError(call: "sd_bus_request_name", code: -ENOTCONN) }
        let rc = sd_bus_request_name(bus, name, 0)
        guard rc >= 0 else { throw BusError(call: "sd_bus_request_name(\(name))", code: rc) }
    }

    /// Starts the bus thread.
    package func start() throws {
        switch spawnPosixThread({ [unowned self] in self.run() }) {
        case .success(let tid): thread = tid
        case .failure(let error): throw BusError(call: "pthread_create", code: -error.code)
        }
    }

    /// Stops the thread and closes the connection.
    package func stop() {
        stopping.store(true, ordering: .relaxed)
        wake()
        if let thread { pthread_join(thread, nil) }
        thread = nil
        close()
    }

    /// Runs `work` on the bus thread with the bus.
    package func perform(_ work: @escaping @Sendable (OpaquePointer) -> Void) {
        queue.withLock { $0.append(work) }
        wake()
    }

    private func close() {
        for slot in slots { sd_bus_slot_unref(slot) }
        slots = []
        if let bus { sd_bus_flush_close_unref(bus) }
        bus = nil
        for fd in [wakePipe.read, wakePipe.write] where fd >= 0 { Glibc.close(fd) }
        wakePipe = (-1, -1)
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakePipe.write, &byte, 1)
    }

    private func run() {
        guard let bus else { return }
        var buffer = [UInt8](repeating: 0, count: 64)
        while !stopping.load(ordering: .relaxed) {
            while sd_bus_process(bus, nil) > 0 {}
            for work in queue.withLock({ pending -> [@Sendable (OpaquePointer) -> Void] in defer { pending = [] }; return pending }) {
                work(bus)
            }
            _ = sd_bus_flush(bus)
            var entries = [
                pollfd(fd: sd_bus_get_fd(bus), events: Int16(sd_bus_get_events(bus)), revents: 0),
                pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0),
            ]
            var until: UInt64 = 0
            var timeout: Int32 = -1
            if sd_bus_get_timeout(bus, &until) > 0, until != UInt64.max {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let nowMicros = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
                timeout = until <= nowMicros ? 0 : Int32(clamping: (until - nowMicros + 999) / 1_000)
            }
            if poll(&entries, 2, timeout) < 0 && errno != EINTR { return }
            if entries[1].revents != 0 { _ = read(wakePipe.read, &buffer, buffer.count) }
        }
    }
}

/// An sd-bus failure with the call that failed.
package struct BusError: Error, CustomStringConvertible {
    var call: String
    var code: Int32
    package var description: String { "\(call): \(String(cString: strerror(-code)))" }
}
