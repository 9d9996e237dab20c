import Foundation
import XCTest

/// The face's bus policy beside Debian's own NetworkManager policy, on a private bus that enforces the system bus's
/// defaults, read in both orders (dbus-daemon reads the files of a policy directory "in undefined order"): an
/// unprivileged user gets nothing NetworkManager's own file refuses, from the real NetworkManager or from the face.
final class NetworkManagerFacePolicyIntegrationTests: XCTestCase {
    private static let managerPolicy = "/usr/share/dbus-1/system.d/org.freedesktop.NetworkManager.conf"
    private static let manager = "/org/freedesktop/NetworkManager"
    /// NetworkManager's State when asleep (NM_STATE_ASLEEP).
    private static let asleep = "u 10"
    /// Members of NetworkManager's own interfaces its policy keeps for root, with arguments that would act.
    private static let rootOnly = [
        "org.freedesktop.NetworkManager.Sleep boolean:true",
        "org.freedesktop.NetworkManager.SetLogging string:trace string:ALL",
        "org.freedesktop.NetworkManager.Settings.LoadConnections array:string:/nonexistent",
        "org.freedesktop.NetworkManager.Settings.ReloadConnections",
    ]
    private var lab: NetLab!
    private var manager: RealNetworkManager?
    private var facePolicy = ""

    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: Self.managerPolicy) else {
            throw XCTSkip("\(Self.managerPolicy) is not installed (Debian package network-manager)")
        }
        lab = try NetLab.make()
        try lab.addLink("eth0")
        try lab.peerIP("addr add 192.0.2.1/24 dev eth0")
        // The face's file as installed, its system user being the user this test runs the face as.
        facePolicy = lab.directory + "/reachd-networkmanager-face.conf"
        try String(contentsOfFile: PrivateBus.dbusDirectory + "/reachd-networkmanager-face.conf", encoding: .utf8)
            .replacingOccurrences(of: "user=\"reachd\"", with: "user=\"root\"")
            .write(toFile: facePolicy, atomically: true, encoding: .utf8)
    }

    override func tearDown() {
        lab?.stopDaemon()
        manager?.stop()
        lab?.tearDown()
    }

    /// The files the bus reads, in order: the face's alone (no NetworkManager installed), or both.
    private enum Order { case faceAlone, faceFirst, managerFirst }

    private func startBus(_ order: Order) throws -> RealNetworkManager {
        let policies = switch order {
        case .faceAlone: [facePolicy]
        case .faceFirst: [facePolicy, Self.managerPolicy]
        case .managerFirst: [Self.managerPolicy, facePolicy]
        }
        let manager = try RealNetworkManager(lab: lab, policies: policies)
        self.manager = manager
        return manager
    }

    /// `dbus-send` as nobody on the private system bus; its output, errors included.
    private func callAsNobody(_ path: String, _ call: String) throws -> String {
        try lab.run("DBUS_SYSTEM_BUS_ADDRESS=\(manager!.busAddress) setpriv --reuid=65534 --regid=65534 --clear-groups "
            + "dbus-send --system --print-reply --dest=org.freedesktop.NetworkManager \(path) \(call) 2>&1 || true")
    }

    private func managerState() throws -> String {
        try manager!.busctl(["get-property", RealNetworkManager.service, Self.manager, RealNetworkManager.service, "State"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Each root-only member is refused by the bus itself, and a read still passes.
    private func assertNobodyIsRefusedTheRootOnlyMembers(file: StaticString = #filePath, line: UInt = #line) throws {
        for call in Self.rootOnly {
            let path = call.contains(".Settings.") ? Self.manager + "/Settings" : Self.manager
            let answer = try callAsNobody(path, call)
            XCTAssertTrue(answer.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(call): \(answer)", file: file, line: line)
        }
        let read = try callAsNobody(Self.manager, "org.freedesktop.DBus.Properties.Get string:org.freedesktop.NetworkManager string:Metered")
        XCTAssertTrue(read.contains("variant"), "a read: \(read)", file: file, line: line)
    }

    private func assertTheRealNetworkManagerStaysAwake(_ order: Order) throws {
        let manager = try startBus(order)
        try manager.addProfile("wired", interface: "eth0", metered: nil, ipv4: .manual(address: "192.0.2.2/24", gateway: "192.0.2.1"))
        try manager.start()
        try manager.waitForActivation("eth0")
        try assertNobodyIsRefusedTheRootOnlyMembers()
        XCTAssertNotEqual(try managerState(), Self.asleep)
        XCTAssertEqual(try manager.deviceProperty("eth0", "State"), RealNetworkManager.activated)
    }

    private func assertTheFaceRefusesWhatNetworkManagerRefuses(_ order: Order) throws {
        let manager = try startBus(order)
        try lab.startDaemon(arguments: ["--networkmanager-face", "system"], environment: manager.environment)
        try eventually("the face on the bus", detail: lab.log) {
            ((try? manager.busctl(["get-property", RealNetworkManager.service, Self.manager, RealNetworkManager.service, "Version"])) ?? "")
                .contains("-reachd")
        }
        try assertNobodyIsRefusedTheRootOnlyMembers()
    }

    func testNetworkManagersPolicyReadFirst() throws { try assertTheRealNetworkManagerStaysAwake(.managerFirst) }

    func testTheFacesPolicyReadFirst() throws { try assertTheRealNetworkManagerStaysAwake(.faceFirst) }

    func testTheFaceWithNetworkManagersPolicyReadFirst() throws { try assertTheFaceRefusesWhatNetworkManagerRefuses(.managerFirst) }

    func testTheFaceWithItsPolicyReadFirst() throws { try assertTheFaceRefusesWhatNetworkManagerRefuses(.faceFirst) }

    func testTheFaceWithoutNetworkManagersPolicy() throws { try assertTheFaceRefusesWhatNetworkManagerRefuses(.faceAlone) }
}
