import CSystemd
import Logging
import ReachdServiceKit
import ReachdSystem
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// The host's power for jobs' power constraints: UPower (`OnBattery`; its display device's `IsPresent`,
/// `Percentage` and `WarningLevel`) and power-profiles-daemon (`ActiveProfile`, under its old name
/// `net.hadess.PowerProfiles` or its new one `org.freedesktop.UPower.PowerProfiles`), read at start and again at
/// each of their `PropertiesChanged` and each change of their names' owners. A service that is not there gives
/// no value, which satisfies every power constraint.
final class PowerSource: StartedComponent, @unchecked Sendable {
    static let upower = "org.freedesktop.UPower"
    static let displayDevice = "/org/freedesktop/UPower/devices/DisplayDevice"
    /// power-profiles-daemon's names, paths and interfaces, the newer first.
    static let profiles = [
        ("org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles"),
        ("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles"),
    ]
    /// Longest profile name kept (the daemon's are a dozen letters).
    static let maximumProfileBytes = 64

    private let connection: BusConnection
    private let onChange: @Sendable (PowerFacts) -> Void
    // Only touched on the bus thread.
    private var facts: PowerFacts?
    /// The task that hands the readings to the scheduler; set once at start.
    private var intake: Task<Void, Never>?

    /// Connects and subscribes; `onChange` gets every new reading (on the bus thread).
    init(bus: Bus, onChange: @escaping @Sendable (PowerFacts) -> Void) throws {
        connection = try BusConnection(bus)
        self.onChange = onChange
        let context = Unmanaged.passUnretained(self).toOpaque()
        let names = [Self.upower] + Self.profiles.map(\.0)
        var rules: [String] = []
        for name in names {
            rules.append("type='signal',sender='\(name)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
            rules.append("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(name)'")
        }
        do {
            for rule in rules {
                try connection.export({ bus, slot in sd_bus_add_match(bus, &slot, rule, powerChanged, context) }, what: "sd_bus_add_match")
            }
        } catch {
            connection.stop()
            throw error
        }
    }

    /// Starts the bus thread and the first reading.
    func start() throws {
        try connection.start()
        connection.perform { [self] bus in refresh(bus) }
    }

    func stop() async {
        connection.stop()
        intake?.cancel()
    }

    /// Follows the power on `which` bus into `scheduler`, or nil (with a warning) when that bus cannot be used.
    static func start(on which: Bus, scheduler: TransferScheduler, logger: Logger) -> PowerSource? {
        guard which != .none else { return nil }
        do {
            // In order, and only the newest reading waits: the scheduler always ends with the last one.
            let (readings, sink) = AsyncStream.makeStream(of: PowerFacts.self, bufferingPolicy: .bufferingNewest(1))
            let source = try PowerSource(bus: which) { sink.yield($0) }
            try source.start()
            source.intake = Task { for await facts in readings { await scheduler.powerChanged(facts) } }
            return source
        } catch {
            logger.warning("power: the \(which.rawValue) bus cannot be used (\(error)); power constraints are taken as met")
            return nil
        }
    }

    /// Reads every value again and publishes them when they changed.
    fileprivate func refresh(_ bus: OpaquePointer) {
        var read = PowerFacts()
        read.onBattery = Self.flag(bus, Self.upower, "/org/freedesktop/UPower", Self.upower, "OnBattery")
        if Self.flag(bus, Self.upower, Self.displayDevice, Self.upower + ".Device", "IsPresent") == true {
            var percent = 0.0
            if Self.trivial(bus, Self.upower, Self.displayDevice, Self.upower + ".Device", "Percentage", "d", &percent),
               percent.isFinite, (0...100).contains(percent) {
                read.batteryPercent = percent
            }
            var level: UInt32 = 0
            if Self.trivial(bus, Self.upower, Self.displayDevice, Self.upower + ".Device", "WarningLevel", "u", &level), level <= 16 {
                read.warningLevel = level
            }
        }
        for (name, path) in Self.profiles {
            if let profile = Self.string(bus, name, path, name, "ActiveProfile") {
                read.profile = profile
                break
            }
        }
        guard read != facts else { return }
        facts = read
        onChange(read)
    }

    private static func trivial<T: BitwiseCopyable>(_ bus: OpaquePointer, _ service: String, _ path: String, _ interface: String, _ member: String,
                                   _ type: Character, _ value: inout T) -> Bool {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        return withUnsafeMutableBytes(of: &value) { bytes in
            sd_bus_get_property_trivial(bus, service, path, interface, member, &error, CChar(type.asciiValue!), bytes.baseAddress) >= 0
        }
    }

    private static func flag(_ bus: OpaquePointer, _ service: String, _ path: String, _ interface: String, _ member: String) -> Bool? {
        var raw: Int32 = 0
        return trivial(bus, service, path, interface, member, "b", &raw) ? raw != 0 : nil
    }

    private static func string(_ bus: OpaquePointer, _ service: String, _ path: String, _ interface: String, _ member: String) -> String? {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var value: UnsafeMutablePointer<CChar>?
        guard sd_bus_get_property_string(bus, service, path, interface, member, &error, &value) >= 0, let value else { return nil }
        defer { free(value) }
        guard strnlen(value, maximumProfileBytes + 1) <= maximumProfileBytes else { return nil }
        let text = String(cString: value)
        return text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) ? text : nil
    }

    fileprivate func refreshFromCallback(_ message: OpaquePointer) {
        guard let bus = sd_bus_message_get_bus(message) else { return }
        refresh(bus)
    }
}

private let powerChanged: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    Unmanaged<PowerSource>.fromOpaque(context).takeUnretainedValue().refreshFromCallback(message)
    return 0
}
