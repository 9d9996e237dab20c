import Foundation
import XCTest

/// ModemManager as python-dbusmock's `modemmanager` template serves it (the mock GNOME's own tests use), on a
/// private bus that reachd reads as its system bus (`DBUS_SYSTEM_BUS_ADDRESS`): the real service's name, paths
/// and interfaces. python-dbusmock ≥ 0.38 (the first with the template) is installed by `make deps` into
/// `.build/test-python` (PYTHONPATH), served by Debian's python3-dbus; Debian's own python3-dbusmock is older.
final class ModemManagerMock {
    static let service = "org.freedesktop.ModemManager1"
    static let modemPath = "/org/freedesktop/ModemManager1/Modems/8"
    static let bearerPath = "/org/freedesktop/ModemManager1/Bearer/0"
    static let modemInterface = "org.freedesktop.ModemManager1.Modem"
    static let modem3gppInterface = "org.freedesktop.ModemManager1.Modem.Modem3gpp"
    /// Where `make deps` installs python-dbusmock.
    static let pythonPath = CommandLineIntegrationTests.packageRoot + "/.build/test-python"

    let bus: PrivateBus
    private let directory: String
    private var mock: SpawnedProcess?

    /// What reachd, busctl and the mock need to find the private system bus.
    var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": bus.address] }

    /// Skips (saying why) without python-dbusmock's modemmanager template or busctl; starts the private bus.
    init(lab: NetLab) throws {
        guard FileManager.default.fileExists(atPath: Self.pythonPath + "/dbusmock/templates/modemmanager.py") else {
            throw XCTSkip("python-dbusmock 0.38 is not in \(Self.pythonPath): run `make deps`")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/busctl") else { throw XCTSkip("busctl is not installed (Debian package systemd)") }
        directory = lab.directory + "/modemmanager"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        bus = try PrivateBus(directory: directory, policies: [])
    }

    /// Starts ModemManager (the mock) and waits until it owns its name.
    func start() throws {
        mock = try SpawnedProcess(
            ["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "modemmanager"],
            environment: environment.merging(["PYTHONPATH": Self.pythonPath, "PATH": "/usr/bin:/bin"]) { _, new in new },
            output: directory + "/mock.log"
        )
        try bus.waitForOwner(of: Self.service)
    }

    /// ModemManager leaves the bus.
    func stop() {
        mock?.stop()
        mock = nil
    }

    /// The template's modem, with a 3GPP `RegistrationState` and one bearer whose `Interface` is `interface`.
    func addModem(bearerInterface interface: String, registration: UInt32) throws {
        try mockCall("/org/freedesktop/ModemManager1", "AddSimpleModem", [""])
        try mockCall("/org/freedesktop/ModemManager1", "AddObject", [
            "ssa{sv}a(ssss)", Self.bearerPath, "org.freedesktop.ModemManager1.Bearer", "2", "Interface", "s", interface, "Connected", "b", "true", "0",
        ])
        try mockCall(Self.modemPath, "AddProperty", ["ssv", Self.modemInterface, "Bearers", "ao", "1", Self.bearerPath])
        try mockCall(Self.modemPath, "AddProperty", ["ssv", Self.modem3gppInterface, "RegistrationState", "u", "\(registration)"])
        // AddProperty announces nothing: one announced change, as ModemManager sends when the modem registers.
        try setRegistration(registration)
    }

    /// Changes the modem's `RegistrationState`, announced with PropertiesChanged.
    func setRegistration(_ state: UInt32) throws {
        try mockCall(Self.modemPath, "UpdateProperties", ["sa{sv}", Self.modem3gppInterface, "1", "RegistrationState", "u", "\(state)"])
    }

    /// busctl on the private bus; throws with its output when it fails.
    @discardableResult
    func busctl(_ arguments: [String]) throws -> String {
        let result = try CommandLineIntegrationTests.run("/usr/bin/busctl", ["--address=\(bus.address)"] + arguments)
        guard result.status == 0 else { throw LabError("busctl \(arguments.joined(separator: " ")): \(result.err)") }
        return result.out
    }

    /// A method of the mock's control interface (org.freedesktop.DBus.Mock) on `path`; `arguments` start with the signature.
    private func mockCall(_ path: String, _ method: String, _ arguments: [String]) throws {
        let signature = arguments.first.map { $0.isEmpty ? [] : [$0] } ?? []
        try busctl(["call", Self.service, path, "org.freedesktop.DBus.Mock", method] + signature + Array(arguments.dropFirst()))
    }

    func tearDown() {
        stop()
        bus.stop()
    }
}
