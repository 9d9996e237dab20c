import Foundation
import XCTest

/// reachd's read-only NetworkManager face (`--networkmanager-face`) on a private bus, never the host's: the reads
/// snapd, unattended-upgrades and scripts make (busctl, dbus-send), a switch eth0 -> wwan0 announced with
/// PropertiesChanged, a write method refused, reachd not reading its own face as NetworkManager, and a real
/// Qt 6 program (QNetworkInformation's networkmanager backend, through PyQt6).
final class NetworkManagerFaceIntegrationTests: XCTestCase {
    private static let manager = "/org/freedesktop/NetworkManager"
    private var lab: NetLab!
    private var bus: PrivateBus?
    private var address: String { bus?.address ?? "" }

    override func setUpWithError() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/busctl") else { throw XCTSkip("busctl is not installed") }
        lab = try NetLab.make()
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.addLink("wwan0", ipv4: "203.0.113.2/24")
        bus = try PrivateBus(directory: lab.directory, policies: ["reachd-networkmanager-face.conf"])
    }

    override func tearDown() {
        lab?.tearDown()
        bus?.stop()
    }

    private func startFace(_ extra: [String] = []) throws {
        try lab.startDaemon(arguments: ["--networkmanager-face", "session"] + extra, environment: ["DBUS_SESSION_BUS_ADDRESS": address])
        try bus!.waitForOwner(of: "org.freedesktop.NetworkManager")
    }

    /// `busctl get-property`'s answer, e.g. `u 4`.
    private func get(_ path: String, _ interface: String, _ property: String) throws -> String {
        try lab.run("busctl --address=\(address) get-property org.freedesktop.NetworkManager \(path) \(interface) \(property)")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func manager(_ property: String) throws -> String {
        try get(Self.manager, "org.freedesktop.NetworkManager", property)
    }

    /// The object path in `busctl`'s answer `o "/path"`.
    private static func path(_ answer: String) -> String {
        answer.split(separator: "\"").dropFirst().first.map(String.init) ?? ""
    }

    func testTheReadsOfSnapdUnattendedUpgradesAndScripts() throws {
        try startFace()
        // snapd and unattended-upgrades: the manager's Metered as `u` (4: guess-no, eth0 by its kind).
        let sent = try lab.run("dbus-send --bus=\(address) --print-reply --dest=org.freedesktop.NetworkManager \(Self.manager) "
            + "org.freedesktop.DBus.Properties.Get string:org.freedesktop.NetworkManager string:Metered")
        XCTAssertTrue(sent.contains("variant       uint32 4"), sent)
        XCTAssertEqual(try manager("Metered"), "u 4")
        XCTAssertEqual(try manager("State"), "u 70")
        XCTAssertEqual(try manager("Connectivity"), "u 4")
        XCTAssertEqual(try manager("PrimaryConnectionType"), #"s "802-3-ethernet""#)
        XCTAssertTrue(try manager("Version").contains("-reachd"))
        let primary = Self.path(try manager("PrimaryConnection"))
        XCTAssertTrue(primary.hasPrefix(Self.manager + "/ActiveConnection/"), primary)
        XCTAssertEqual(try get(primary, "org.freedesktop.NetworkManager.Connection.Active", "Type"), #"s "802-3-ethernet""#)
        XCTAssertEqual(try get(primary, "org.freedesktop.NetworkManager.Connection.Active", "Default"), "b true")
        let device = Self.path(try lab.run("busctl --address=\(address) call org.freedesktop.NetworkManager \(Self.manager) "
            + "org.freedesktop.NetworkManager GetDeviceByIpIface s eth0"))
        XCTAssertEqual(try get(device, "org.freedesktop.NetworkManager.Device", "DeviceType"), "u 1")
        XCTAssertEqual(try get(device, "org.freedesktop.NetworkManager.Device", "State"), "u 100")
        XCTAssertEqual(try get(device, "org.freedesktop.NetworkManager.Device", "Interface"), #"s "eth0""#)

        // Introspection from the vtables; the object manager lists the devices.
        let introspection = try lab.run("busctl --address=\(address) introspect org.freedesktop.NetworkManager \(Self.manager)")
        XCTAssertTrue(introspection.contains(".Metered") && introspection.contains("property"), introspection)
        let objects = try lab.run("dbus-send --bus=\(address) --print-reply --dest=org.freedesktop.NetworkManager /org/freedesktop "
            + "org.freedesktop.DBus.ObjectManager.GetManagedObjects")
        XCTAssertTrue(objects.contains(device) && objects.contains(primary), objects)
    }

    func testASwitchToWwanIsAnnounced() throws {
        try startFace()
        let log = lab.directory + "/monitor.log"
        let monitor = try bus!.startMonitor("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'", output: log)
        defer { monitor.terminate() }
        try lab.ip("route add default via 203.0.113.1 dev wwan0 metric 50")
        var signals = ""
        try eventually("PropertiesChanged with Metered and PrimaryConnectionType", detail: signals) {
            signals = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return signals.contains("\"Metered\"") && signals.contains("\"PrimaryConnectionType\"")
        }
        XCTAssertTrue(signals.contains("path=/org/freedesktop/NetworkManager; interface=org.freedesktop.DBus.Properties"), signals)
        XCTAssertEqual(try manager("Metered"), "u 3", "guess-yes: wwan0 by its kind")
        XCTAssertEqual(try manager("PrimaryConnectionType"), #"s "gsm""#)
        XCTAssertFalse(signals.contains("\"Version\""), "only what changed: \(signals)")
    }

    func testWritesAreRefused() throws {
        try startFace()
        let refused = try lab.run("dbus-send --bus=\(address) --print-reply --dest=org.freedesktop.NetworkManager \(Self.manager) "
            + "org.freedesktop.NetworkManager.Enable boolean:false || true")
        XCTAssertTrue(refused.contains("org.freedesktop.NetworkManager.PermissionDenied"), refused)
        XCTAssertTrue(refused.contains("reachd's NetworkManager face is read-only"), refused)
        let set = try lab.run("busctl --address=\(address) set-property org.freedesktop.NetworkManager \(Self.manager) "
            + "org.freedesktop.NetworkManager WirelessEnabled b false 2>&1 || true")
        XCTAssertTrue(set.contains("is not writable"), set)
        XCTAssertEqual(try manager("NetworkingEnabled"), "b true")
    }

    /// reachd reading NetworkManager on the bus where it serves the face: it must see its own face and not
    /// take the face's values (its own verdicts) for NetworkManager's.
    func testReachdDoesNotReadItsOwnFace() throws {
        try startFace(["--networkmanager", "session"])
        try eventually("reachd to judge the name's owner", detail: lab.log) {
            lab.log.contains("reachd's NetworkManager face, which is not read") || lab.log.contains("NetworkManager metered flags")
        }
        XCTAssertFalse(lab.log.contains("NetworkManager metered flags"), lab.log)
        let status = try lab.reachctl(["status", "--json"]).out
        XCTAssertFalse(status.contains("networkmanager"), status)
    }

    func testIntrospectionOfTheControlInterfaceMatchesItsFile() throws {
        try startFace()
        let exported = try lab.run("dbus-send --bus=\(address) --print-reply=literal --dest=org.freedesktop.NetworkManager "
            + "/org/reachd/NetworkManagerFace1 org.freedesktop.DBus.Introspectable.Introspect")
        let file = try String(contentsOfFile: PrivateBus.dbusDirectory + "/org.reachd.NetworkManagerFace1.xml", encoding: .utf8)
        XCTAssertFalse(PrivateBus.interface("org.reachd.NetworkManagerFace1", in: file).isEmpty)
        XCTAssertEqual(PrivateBus.interface("org.reachd.NetworkManagerFace1", in: exported), PrivateBus.interface("org.reachd.NetworkManagerFace1", in: file))
    }

    /// StepBack with no NetworkManager to take the name (it failed to start): the name is free at once, and the
    /// face takes it again after its 30 s.
    func testAStepBackNobodyFollowsEndsWithTheFaceBack() throws {
        try startFace()
        _ = try lab.run("dbus-send --bus=\(address) --print-reply --dest=org.freedesktop.NetworkManager /org/reachd/NetworkManagerFace1 "
            + "org.reachd.NetworkManagerFace1.StepBack")
        let owned = try lab.run("dbus-send --bus=\(address) --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus "
            + "org.freedesktop.DBus.NameHasOwner string:org.freedesktop.NetworkManager")
        XCTAssertTrue(owned.contains("boolean false"), "released before the reply: \(owned)")
        try eventually("the face to take the name again", timeout: 90, detail: lab.log) { lab.log.contains("nobody took org.freedesktop.NetworkManager") }
        try bus!.waitForOwner(of: "org.freedesktop.NetworkManager")
        XCTAssertEqual(try manager("Metered"), "u 4")
    }

    /// libnm's own tools (nm-online; nmcli's state, devices, metered flags and active connections) and GLib's NetworkManager monitor (GNetworkMonitorNM, chosen over
    /// any GIO module) on a private system bus where only reachd's face answers.
    func testLibnmToolsAndGLibsMonitorReadTheFace() throws {
        for tool in ["/usr/bin/nm-online", "/usr/bin/nmcli"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw XCTSkip("\(tool) is not installed (Debian package network-manager)")
        }
        try lab.startDaemon(arguments: ["--networkmanager-face", "system"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": address])
        try bus!.waitForOwner(of: "org.freedesktop.NetworkManager")
        let system = "DBUS_SYSTEM_BUS_ADDRESS=\(address)"
        XCTAssertEqual(try lab.run("\(system) nm-online -s -q -t 10; echo $?"), "0\n", "startup complete and online")
        XCTAssertEqual(try lab.run("\(system) nmcli -t -f STATE,CONNECTIVITY general status"), "connected:full\n")
        XCTAssertEqual(try lab.run("\(system) nmcli -t -f TYPE,NAME,STATE connection show --active"), "802-3-ethernet:eth0:activated\n")
        let devices = try lab.run("\(system) nmcli -t -f DEVICE,TYPE,STATE device status")
        XCTAssertEqual(Set(devices.split(separator: "\n")), ["eth0:ethernet:connected", "wwan0:modem:connected"], devices)
        XCTAssertEqual(try lab.run("\(system) nmcli -t -f GENERAL.METERED device show eth0"), "GENERAL.METERED:no (guessed)\n")
        XCTAssertEqual(try lab.run("\(system) nmcli -t -f TYPE,NAME,DEVICE connection show --active"), "802-3-ethernet:eth0:eth0\n")
        let glib = try lab.run("\(system) GIO_USE_NETWORK_MONITOR=networkmanager GIO_MODULE_DIR=\(lab.directory) /usr/bin/python3 -c "
            + "'from gi.repository import Gio; m = Gio.NetworkMonitor.get_default(); "
            + "print(type(m).__name__, m.get_network_available(), m.get_network_metered(), m.get_connectivity().value_nick)'")
        XCTAssertEqual(glib, "GNetworkMonitorNM True False full\n")
        try lab.ip("route add default via 203.0.113.1 dev wwan0 metric 50")
        try eventually("GLib's monitor to read wwan0 as metered") {
            try lab.run("\(system) GIO_USE_NETWORK_MONITOR=networkmanager GIO_MODULE_DIR=\(lab.directory) /usr/bin/python3 -c "
                + "'from gi.repository import Gio; print(Gio.NetworkMonitor.get_default().get_network_metered())'") == "True\n"
        }
        XCTAssertEqual(try lab.run("\(system) nmcli -t -f STATE,CONNECTIVITY general status"), "connected:full\n")
        XCTAssertEqual(try lab.run("\(system) nmcli -t -f TYPE,NAME,DEVICE connection show --active"), "gsm:wwan0:wwan0\n")
        XCTAssertEqual(try lab.run("\(system) nmcli -t -f GENERAL.METERED device show wwan0"), "GENERAL.METERED:yes (guessed)\n")
    }

    /// Qt 6's QNetworkInformation (Debian's qt6-base through python3-pyqt6) with the networkmanager backend on
    /// a private system bus where only reachd's face answers: reachability, isMetered and transportMedium for
    /// eth0, then the change signals of a switch to wwan0.
    func testAQt6ProgramReadsTheFace() throws {
        guard FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/PyQt6") else {
            throw XCTSkip("python3-pyqt6 is not installed")
        }
        try lab.startDaemon(arguments: ["--networkmanager-face", "system"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": address])
        try bus!.waitForOwner(of: "org.freedesktop.NetworkManager")
        let qt = try QtProbe(environment: ["DBUS_SYSTEM_BUS_ADDRESS": address, "QT_QPA_PLATFORM": "offscreen"])
        defer { qt.stop() }
        let initial = try qt.next()
        XCTAssertEqual(initial["event"] as? String, "initial", "\(initial)")
        XCTAssertEqual(initial["backend"] as? String, "networkmanager")
        XCTAssertEqual(initial["reachability"] as? String, "Online")
        XCTAssertEqual(initial["metered"] as? Bool, false)
        XCTAssertEqual(initial["medium"] as? String, "Ethernet")

        try lab.ip("route add default via 203.0.113.1 dev wwan0 metric 50")
        var seen: [[String: Any]] = []
        while !(seen.last.map { $0["medium"] as? String == "Cellular" && $0["metered"] as? Bool == true } ?? false) {
            seen.append(try qt.next())
        }
        print("Qt: \(initial) then \(seen)")
        XCTAssertTrue(seen.allSatisfy { $0["event"] as? String != "initial" }, "change signals: \(seen)")
        XCTAssertEqual(seen.last?["reachability"] as? String, "Online")
    }
}

/// Tests/Support/qt_network_information.py: its JSON lines.
private final class QtProbe {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Support/qt_network_information.py").standardized.path
    private let process = Process()
    private let input = Pipe()
    private let lines: LineReader

    init(environment: [String: String]) throws {
        // The system's python3 (python3-pyqt6), not whatever python3 comes first on PATH.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.script, "120"]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = input
        lines = LineReader(output.fileHandleForReading)
        try process.run()
    }

    /// The next line, within 30 s.
    func next() throws -> [String: Any] {
        let text: String
        do { text = try lines.next(timeout: 30) } catch { throw LabError("no line from the Qt program (\(error))") }
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw LabError("not a JSON object: \(text)")
        }
        return object
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}
