import CReachdBus
import CSystemd
import Logging
import ReachdNetlink
import ReachdModel
import ReachdProtocol
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `org.reachd.Reachability1` at `/org/reachd/Reachability1` (dbus/org.reachd.Reachability1.xml): the
/// internet verdict as properties, `PropertiesChanged` only for values that changed, and `CheckHost`.
/// sd-bus is used from one thread of the service's own, asleep in `poll(2)` on the bus and a wake-up pipe.
public final class BusService: @unchecked Sendable {
    /// Which bus to use (`reachd --bus`).
    public enum Bus: String, Sendable, CaseIterable {
        case system, session, none
    }

    public static let name = "org.reachd.Reachability1"
    public static let path = "/org/reachd/Reachability1"
    static let interface = "org.reachd.Reachability1"

    private let hub: VerdictHub
    private let hosts: HostMonitor
    private let logger: Logger
    // Touched by init/stop on the caller's thread and by the bus thread in between.
    private var bus: OpaquePointer?
    private var slot: OpaquePointer?
    private var thread: pthread_t?
    private var wakePipe: (read: Int32, write: Int32) = (-1, -1)
    private var emitted: [String: PropertyValue] = [:]
    /// Work handed to the bus thread (sd-bus objects are not thread-safe).
    private let queue = Mutex<[@Sendable (BusService) -> Void]>([])
    private let stopping = Atomic<Bool>(false)

    /// Connects, exports the object and takes the name; throws when the bus cannot be used.
    public init(bus which: Bus, hub: VerdictHub, hosts: HostMonitor, logger: Logger) throws {
        self.hub = hub
        self.hosts = hosts
        self.logger = logger
        var bus: OpaquePointer?
        let opened = which == .system ? sd_bus_open_system(&bus) : sd_bus_open_user(&bus)
        guard opened >= 0, let bus else { throw BusError(call: "sd_bus_open_\(which.rawValue)", code: opened) }
        self.bus = bus
        var callbacks = reachd_bus_callbacks(get_property: busGetProperty, check_host: busCheckHost)
        let context = Unmanaged.passUnretained(self).toOpaque()
        var slot: OpaquePointer?
        var rc = reachd_bus_add_object(bus, Self.path, Self.interface, &callbacks, context, &slot)
        guard rc >= 0 else { close(); throw BusError(call: "sd_bus_add_object_vtable", code: rc) }
        self.slot = slot
        rc = sd_bus_request_name(bus, Self.name, 0)
        guard rc >= 0 else { close(); throw BusError(call: "sd_bus_request_name(\(Self.name))", code: rc) }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { close(); throw BusError(call: "pipe", code: -errno) }
        wakePipe = (fds[0], fds[1])
        if let verdict = hub.current?.verdict { emitted = Self.properties(of: verdict) }
    }

    /// Serves until `stop`.
    public func start() throws {
        switch spawnPosixThread({ [unowned self] in self.run() }) {
        case .success(let tid): thread = tid
        case .failure(let error): throw BusError(call: "pthread_create", code: -error.code)
        }
    }

    public func stop() {
        stopping.store(true, ordering: .relaxed)
        wake()
        if let thread { pthread_join(thread, nil) }
        thread = nil
        close()
    }

    /// A new internet verdict: properties whose value changed are announced.
    public func verdictChanged(_ verdict: Verdict) {
        perform { service in service.emitChanges(for: verdict) }
    }

    private func close() {
        if let slot { sd_bus_slot_unref(slot) }
        if let bus { sd_bus_flush_close_unref(bus) }
        slot = nil
        bus = nil
        for fd in [wakePipe.read, wakePipe.write] where fd >= 0 { Glibc.close(fd) }
        wakePipe = (-1, -1)
    }

    private func perform(_ work: @escaping @Sendable (BusService) -> Void) {
        queue.withLock { $0.append(work) }
        wake()
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakePipe.write, &byte, 1)
    }

    // MARK: - Bus thread

    private func run() {
        guard let bus else { return }
        var buffer = [UInt8](repeating: 0, count: 64)
        while !stopping.load(ordering: .relaxed) {
            while sd_bus_process(bus, nil) > 0 {}
            for work in queue.withLock({ pending -> [@Sendable (BusService) -> Void] in defer { pending = [] }; return pending }) {
                work(self)
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

    private func emitChanges(for verdict: Verdict) {
        guard let bus else { return }
        let now = Self.properties(of: verdict)
        let changed = now.keys.sorted().filter { emitted[$0] != now[$0] }
        emitted = now
        guard !changed.isEmpty else { return }
        var names = changed.map { strdup($0) } + [nil]
        defer { for name in names { free(name) } }
        let rc = sd_bus_emit_properties_changed_strv(bus, Self.path, Self.interface, &names)
        if rc < 0 { logger.warning("D-Bus: \(BusError(call: "sd_bus_emit_properties_changed", code: rc))") }
    }

    fileprivate func appendProperty(_ name: String, to reply: OpaquePointer) -> Int32 {
        guard let verdict = hub.current?.verdict, let value = Self.properties(of: verdict)[name] else { return -ENOENT }
        return BusMessage.append(value, to: reply)
    }

    fileprivate func checkHost(_ call: OpaquePointer) -> Int32 {
        var pointer: UnsafePointer<CChar>?
        let rc = sd_bus_message_read_basic(call, CChar(UInt8(ascii: "s")), &pointer)
        guard rc >= 0, let pointer else { return rc }
        let host = String(cString: pointer)
        guard Request.isValidHost(host) else {
            return BusMessage.replyError(call, name: "org.freedesktop.DBus.Error.InvalidArgs", message: "not a host name or address: \(host.prefix(64))")
        }
        let message = BusMessage.Retained(call)
        Task {
            let verdict = await hosts.verdict(for: host)
            self.perform { service in
                guard let bus = service.bus else { return }
                BusMessage.reply(message.pointer, with: BusMessage.dictionary(of: verdict), on: bus, logger: service.logger)
                message.release()
            }
        }
        return 1
    }

    // MARK: - Values

    enum PropertyValue: Equatable {
        case bool(Bool)
        case string(String)
        case strings([String])
        case uint64(UInt64)

        /// The D-Bus signature.
        var signature: String {
            switch self {
            case .bool: "b"
            case .string: "s"
            case .strings: "as"
            case .uint64: "t"
            }
        }
    }

    static func properties(of verdict: Verdict) -> [String: PropertyValue] {
        [
            "Reachable": .bool(verdict.reachable),
            "Status": .string(verdict.status.rawValue),
            "Metered": .bool(verdict.metered),
            "MeteredReason": .string(verdict.meteredReason ?? ""),
            "Interface": .string(verdict.interface ?? ""),
            "Flags": .strings(verdict.flags.names),
            "Connectivity": .string(verdict.connectivity.rawValue),
        ]
    }
}

/// An sd-bus failure with the call that failed.
struct BusError: Error, CustomStringConvertible {
    var call: String
    var code: Int32
    var description: String { "\(call): \(String(cString: strerror(-code)))" }
}

private let busGetProperty: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> Int32 = { context, name, reply in
    guard let context, let name, let reply else { return -EINVAL }
    return Unmanaged<BusService>.fromOpaque(context).takeUnretainedValue().appendProperty(String(cString: name), to: reply)
}

private let busCheckHost: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?) -> Int32 = { context, call in
    guard let context, let call else { return -EINVAL }
    return Unmanaged<BusService>.fromOpaque(context).takeUnretainedValue().checkHost(call)
}
