import CReachdBus
import CSystemd
import Logging
import ReachdModel
import ReachdMonitor
import ReachdServiceKit
import ReachdSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// reachd's read-only face of NetworkManager's D-Bus API (`--networkmanager-face`, docs/networkmanager-face.md):
/// `org.freedesktop.NetworkManager` served from reachd's verdict and snapshot, for the programs that ask only
/// NetworkManager (snapd, unattended-upgrades, Qt's `QNetworkInformation`, GLib's NetworkManager monitor).
/// The name is taken letting others replace it and queueing behind an owner, so NetworkManager keeps it when
/// it runs; every method that would change something fails with `PermissionDenied`.
public final class NetworkManagerFace: @unchecked Sendable {
    public static let name = "org.freedesktop.NetworkManager"
    static let interface = "org.freedesktop.NetworkManager"
    static let deviceInterface = "org.freedesktop.NetworkManager.Device"
    static let activeInterface = "org.freedesktop.NetworkManager.Connection.Active"
    static let readOnly = "org.freedesktop.NetworkManager.PermissionDenied"

    private let hub: VerdictHub
    private let classifier: InterfaceClassifier
    private let checking: Bool
    let logger: Logger
    /// How the wait after a step back is timed.
    let sleeper: Sleeper
    private let connection: BusConnection
    /// Only touched on the bus thread (and by init before it runs): what every reader is served.
    private var state: NetworkManagerFaceState
    /// Bus thread: the step-back (numbered by `stepBacks`) the name was given up for and not asked for again
    /// since; nil while the face asks for the name. Only that step-back's timer may ask again: a newer one replaces it.
    var pendingStepBack: UInt64?
    /// Bus thread: how many step-backs there have been.
    var stepBacks: UInt64 = 0
    /// How long a name given up stays free for NetworkManager to take before the face asks for it again.
    static let stepBackSeconds = 30

    /// Connects, exports the objects and asks for the name; throws when the bus cannot be used.
    /// `checking`: a connectivity check is configured.
    package init(bus which: Bus, hub: VerdictHub, classifier: InterfaceClassifier, checking: Bool, sleeper: Sleeper, logger: Logger) throws {
        self.hub = hub
        self.classifier = classifier
        self.checking = checking
        self.sleeper = sleeper
        self.logger = logger
        state = NetworkManagerFaceState(verdict: hub.current?.verdict, snapshot: hub.snapshot, classifier: classifier, checking: checking)
        connection = try BusConnection(which)
        var callbacks = reachd_nm_face_callbacks(get_property: faceGetProperty, method: faceMethod, exists: faceExists, nodes: faceNodes)
        let context = Unmanaged.passUnretained(self).toOpaque()
        do {
            for part in [REACHD_NM_FACE_MANAGER, REACHD_NM_FACE_DEVICES, REACHD_NM_FACE_ACTIVE, REACHD_NM_FACE_NODES,
                         REACHD_NM_FACE_OBJECT_MANAGER, REACHD_NM_FACE_CONTROL, REACHD_NM_FACE_WIRED, REACHD_NM_FACE_WIRELESS,
                         REACHD_NM_FACE_MODEM, REACHD_NM_FACE_BLUETOOTH, REACHD_NM_FACE_GENERIC] {
                try connection.export({ bus, slot in reachd_nm_face_add(bus, part, &callbacks, context, &slot) }, what: "reachd_nm_face_add")
            }
            let rule = "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.name)'"
            try connection.export({ bus, slot in sd_bus_add_match(bus, &slot, rule, faceNameOwnerChanged, context) }, what: "sd_bus_add_match")
            try requestName()
        } catch {
            connection.stop()
            throw error
        }
    }

    /// Asks for the name without replacing an owner (NetworkManager), queued behind it (the bus hands the name
    /// over when it quits), and letting an owner that asks to replace take it.
    func requestName() throws {
        let owns = try connection.requestName(Self.name, flags: UInt64(SD_BUS_NAME_ALLOW_REPLACEMENT) | UInt64(SD_BUS_NAME_QUEUE))
        if !owns { logger.info("D-Bus: \(Self.name) has an owner (NetworkManager); the face waits in the name's queue") }
    }

    /// Serves until `stop`.
    public func start() throws { try connection.start() }

    public func stop() { connection.stop() }

    /// Runs `work` with the face on the bus thread.
    func perform(_ work: @escaping @Sendable (NetworkManagerFace) -> Void) {
        connection.perform { [self] _ in work(self) }
    }

    /// The verdict or the snapshot changed: the objects and properties that changed are announced.
    public func networkChanged() {
        connection.perform { [self] bus in update(on: bus) }
    }

    // MARK: - Bus thread

    private func update(on bus: OpaquePointer) {
        let new = NetworkManagerFaceState(verdict: hub.current?.verdict, snapshot: hub.snapshot, classifier: classifier, checking: checking)
        let old = state
        guard new != old else { return }
        let manager = NetworkManagerFaceState.managerPath
        // Objects going away are announced while they still exist (sd-bus reads their interfaces); a device whose
        // type changed goes and comes back with its new type-specific interface.
        let replaced = { (path: String) in new.properties(at: path) == nil || new.typedInterfaces[path] != old.typedInterfaces[path] }
        for path in old.childPaths where replaced(path) {
            check(sd_bus_emit_object_removed(bus, path), "sd_bus_emit_object_removed")
            if old.devices[path] != nil { check(reachd_nm_face_emit(bus, manager, Self.interface, "DeviceRemoved", CChar(UInt8(ascii: "o")), 0, path), "DeviceRemoved") }
        }
        state = new
        for path in new.childPaths where old.properties(at: path) == nil || new.typedInterfaces[path] != old.typedInterfaces[path] {
            check(sd_bus_emit_object_added(bus, path), "sd_bus_emit_object_added")
            if new.devices[path] != nil { check(reachd_nm_face_emit(bus, manager, Self.interface, "DeviceAdded", CChar(UInt8(ascii: "o")), 0, path), "DeviceAdded") }
        }
        emitChanges(at: manager, interface: Self.interface, from: old.manager, to: new.manager, on: bus)
        for (path, properties) in new.devices where !replaced(path) {
            emitChanges(at: path, interface: Self.deviceInterface, from: old.devices[path], to: properties, on: bus)
        }
        for (path, properties) in new.active { emitChanges(at: path, interface: Self.activeInterface, from: old.active[path], to: properties, on: bus) }
        if case .uint32(let value)? = new.manager["State"], new.manager["State"] != old.manager["State"] {
            check(reachd_nm_face_emit(bus, manager, Self.interface, "StateChanged", CChar(UInt8(ascii: "u")), value, nil), "StateChanged")
        }
    }

    /// PropertiesChanged for the values that changed of an object that existed before.
    private func emitChanges(at path: String, interface: String, from old: NetworkManagerFaceState.Properties?,
                             to new: NetworkManagerFaceState.Properties, on bus: OpaquePointer) {
        guard let old else { return }
        let changed = new.keys.sorted().filter { old[$0] != new[$0] }
        guard !changed.isEmpty else { return }
        var names = changed.map { strdup($0) } + [nil]
        defer { for name in names { free(name) } }
        check(sd_bus_emit_properties_changed_strv(bus, path, interface, &names), "sd_bus_emit_properties_changed")
    }

    private func check(_ rc: Int32, _ call: String) {
        if rc < 0 { logger.warning("D-Bus: \(BusError(call: call, code: rc))") }
    }

    fileprivate func appendProperty(_ name: String, of interface: String, at path: String, to reply: OpaquePointer) -> Int32 {
        guard let value = state.value(of: name, interface: interface, at: path) else { return -ENOENT }
        return BusMessage.append(value, to: reply)
    }

    fileprivate func exists(_ path: String, interface: String) -> Bool { state.has(interface, at: path) }

    /// The child paths as a NULL-terminated array from malloc, which sd-bus frees.
    fileprivate func nodes() -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        let paths = state.childPaths
        guard let raw = malloc(MemoryLayout<UnsafeMutablePointer<CChar>?>.stride * (paths.count + 1)) else { return nil }
        let list = raw.bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: paths.count + 1)
        for (index, path) in paths.enumerated() { list[index] = strdup(path) }
        list[paths.count] = nil
        return list
    }

    /// The reading methods answer from the state; every other method is refused.
    fileprivate func method(_ call: OpaquePointer) -> Int32 {
        let member = sd_bus_message_get_member(call).map { String(cString: $0) } ?? ""
        guard let bus = sd_bus_message_get_bus(call) else { return -ENOTCONN }
        let answer: BusMessage.Value?
        switch (sd_bus_message_get_path(call).map { String(cString: $0) }, member) {
        case ("/org/reachd/NetworkManagerFace1", "StepBack"):
            return stepBack(call, on: bus)
        case (NetworkManagerFaceState.managerPath, "GetDevices"), (NetworkManagerFaceState.managerPath, "GetAllDevices"):
            answer = state.manager["Devices"]
        case (NetworkManagerFaceState.managerPath, "CheckConnectivity"):
            answer = state.manager["Connectivity"]
        case (NetworkManagerFaceState.managerPath, "state"):
            answer = state.manager["State"]
        case (NetworkManagerFaceState.managerPath, "GetDeviceByIpIface"):
            var pointer: UnsafePointer<CChar>?
            let rc = sd_bus_message_read_basic(call, CChar(UInt8(ascii: "s")), &pointer)
            guard rc >= 0, let pointer else { return rc }
            let name = String(cString: pointer)
            guard let path = state.devices.first(where: { $0.value["Interface"] == .string(name) })?.key else {
                return BusMessage.replyError(call, name: "org.freedesktop.NetworkManager.UnknownDevice", message: "No device found for the requested iface.")
            }
            answer = .objectPath(path)
        default:
            answer = nil
        }
        guard let answer else {
            return BusMessage.replyError(
                call, name: Self.readOnly,
                message: "reachd's NetworkManager face is read-only: \(member.prefix(64)) is not served (NetworkManager does not run here)"
            )
        }
        BusMessage.reply(call, with: answer, on: bus, logger: logger)
        return 1
    }
}

private func face(_ context: UnsafeMutableRawPointer) -> NetworkManagerFace {
    Unmanaged<NetworkManagerFace>.fromOpaque(context).takeUnretainedValue()
}

private let faceGetProperty: @convention(c) (
    UnsafeMutableRawPointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, OpaquePointer?
) -> Int32 = { context, path, interface, name, reply in
    guard let context, let path, let interface, let name, let reply else { return -EINVAL }
    return face(context).appendProperty(String(cString: name), of: String(cString: interface), at: String(cString: path), to: reply)
}

private let faceMethod: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?) -> Int32 = { context, call in
    guard let context, let call else { return -EINVAL }
    return face(context).method(call)
}

private let faceExists: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32 = { context, path, interface in
    guard let context, let path, let interface else { return 0 }
    return face(context).exists(String(cString: path), interface: String(cString: interface)) ? 1 : 0
}

private let faceNameOwnerChanged: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    face(context).nameOwnerChanged(message)
    return 0
}

private let faceNodes: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = { context in
    guard let context else { return nil }
    return face(context).nodes()
}

/// A call set once its target exists (the face or the budgets, after NetworkView which tells of the snapshots);
/// until then nothing.
final class Relay<Value: Sendable>: Sendable {
    private let target = Mutex<(@Sendable (Value) -> Void)?>(nil)

    init() {}

    func set(_ call: @escaping @Sendable (Value) -> Void) { target.withLock { $0 = call } }

    func call(_ value: Value) { target.withLock { $0 }?(value) }
}
