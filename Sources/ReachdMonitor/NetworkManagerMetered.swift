import CSystemd
import Logging
import ReachdModel
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// NetworkManager as a metered source: the `Metered` property of the device carrying each interface,
/// read when the interfaces or NetworkManager change and followed through `PropertiesChanged`.
/// When NetworkManager is not on the bus there are no values (and the configuration and kinds decide); nor
/// when reachd's own NetworkManager face holds the name (docs/networkmanager-face.md).
package final class NetworkManagerMetered: BusSource, @unchecked Sendable {
    package static let serviceName = "NetworkManager"
    package static let withoutService = "metered flags come from the configuration and interface kinds"
    static let service = "org.freedesktop.NetworkManager"
    static let deviceInterface = "org.freedesktop.NetworkManager.Device"

    private let connection: BusConnection
    private let logger: Logger
    private let onChange: @Sendable ([String: ManagerMetered]) -> Void
    // Only touched on the bus thread.
    private var interfaces: Set<String> = []
    private var devices: [String: String] = [:]
    private var values: [String: ManagerMetered] = [:]
    private var ownFace = false

    /// Connects and subscribes; `onChange` gets every new map of interface name → value (on the bus thread).
    package init(bus: Bus, logger: Logger, onChange: @escaping @Sendable ([String: ManagerMetered]) -> Void) throws {
        connection = try BusConnection(bus)
        self.logger = logger
        self.onChange = onChange
        try connection.addMatches([
            (BusPeer.signal(from: Self.service, "org.freedesktop.DBus.Properties", "PropertiesChanged", ",arg0='\(Self.deviceInterface)'"),
             managerPropertiesChanged),
            (BusPeer.signal(from: Self.service, Self.service, "DeviceAdded"), managerDevicesChanged),
            (BusPeer.signal(from: Self.service, Self.service, "DeviceRemoved"), managerDevicesChanged),
            (BusPeer.ownerChanged(of: Self.service), managerDevicesChanged),
        ], context: Unmanaged.passUnretained(self).toOpaque())
    }

    package static func merging(into merger: SnapshotMerger) -> @Sendable ([String: ManagerMetered]) -> Void {
        { merger.update(manager: $0) }
    }

    package func start() throws { try connection.start() }

    package func stop() { connection.stop() }

    /// The interfaces to follow: the names of the current links.
    package func follow(_ names: Set<String>) {
        connection.perform { [self] bus in
            guard names != interfaces else { return }
            interfaces = names
            refresh(bus)
        }
    }

    /// Reads every followed interface's device and `Metered` again.
    fileprivate func refresh(_ bus: OpaquePointer) {
        let face = isReachdFace(bus)
        if face != ownFace {
            ownFace = face
            logger.info(face ? "NetworkManager: the name is held by reachd's NetworkManager face, which is not read as NetworkManager"
                             : "NetworkManager: the name is not held by reachd's NetworkManager face")
        }
        if face {
            devices = [:]
            publish([:])
            return
        }
        var found: [String: String] = [:]
        var read: [String: ManagerMetered] = [:]
        for name in interfaces.sorted() {
            guard let path = device(of: name, on: bus) else { continue }
            found[path] = name
            var error = sd_bus_error()
            var raw: UInt32 = 0
            if sd_bus_get_property_trivial(bus, Self.service, path, Self.deviceInterface, "Metered", &error, CChar(UInt8(ascii: "u")), &raw) >= 0,
               let value = ManagerMetered(rawValue: raw) {
                read[name] = value
            }
            sd_bus_error_free(&error)
        }
        devices = found
        publish(read)
    }

    /// The name is reachd's NetworkManager face (its `Version` says `-reachd`), this process's or another
    /// reachd's: its values are reachd's own verdicts, never read back as NetworkManager's.
    private func isReachdFace(_ bus: OpaquePointer) -> Bool {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var version: UnsafeMutablePointer<CChar>?
        guard sd_bus_get_property_string(bus, Self.service, "/org/freedesktop/NetworkManager", Self.service, "Version", &error, &version) >= 0,
              let version else { return false }
        defer { free(version) }
        return String(cString: version).contains("-reachd")
    }

    /// `GetDeviceByIpIface(name)`; nil when NetworkManager is absent or does not manage it.
    private func device(of name: String, on bus: OpaquePointer) -> String? {
        var call: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &call, Self.service, "/org/freedesktop/NetworkManager", Self.service, "GetDeviceByIpIface") >= 0,
              let call else { return nil }
        defer { sd_bus_message_unref(call) }
        guard name.withCString({ sd_bus_message_append_basic(call, CChar(UInt8(ascii: "s")), $0) }) >= 0 else { return nil }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        guard sd_bus_call(bus, call, 1_000_000, &error, &reply) >= 0, let reply else { return nil }
        defer { sd_bus_message_unref(reply) }
        var path: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "o")), &path) > 0, let path else { return nil }
        return String(cString: path)
    }

    /// A device's PropertiesChanged: picks `Metered` out of the changed values.
    fileprivate func propertiesChanged(_ message: OpaquePointer) {
        guard let path = sd_bus_message_get_path(message).map({ String(cString: $0) }), let name = devices[path],
              BusPeer.text(message) != nil else { return }
        var updated = values
        guard BusPeer.forEachProperty(message, { key in
            guard key == "Metered" else { return false }
            if let raw = BusPeer.variant(message, "u", BusPeer.uint32) { updated[name] = ManagerMetered(rawValue: raw) }
            return true
        }) else { return }
        publish(updated)
    }

    private func publish(_ new: [String: ManagerMetered]) {
        guard new != values else { return }
        values = new
        logger.info("NetworkManager metered flags", metadata: ["devices": "\(new.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.name)" })"])
        onChange(new)
    }

    /// The bus this connection's thread serves, for the C callbacks (which run on that thread).
    fileprivate func refreshFromCallback(_ message: OpaquePointer) {
        guard let bus = sd_bus_message_get_bus(message) else { return }
        refresh(bus)
    }
}

private let managerPropertiesChanged: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<NetworkManagerMetered>.fromOpaque(context).takeUnretainedValue().propertiesChanged(message)
    return 0
}

private let managerDevicesChanged: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<NetworkManagerMetered>.fromOpaque(context).takeUnretainedValue().refreshFromCallback(message)
    return 0
}
