import Foundation
import ReachdModel
import XCTest

/// NetworkManager as a metered source, against Debian's real NetworkManager (see RealNetworkManager): it
/// manages eth0 in the lab's host namespace from a keyfile profile, on a private system bus that reachd
/// (`--networkmanager system`) finds through DBUS_SYSTEM_BUS_ADDRESS. reachd reads the `Metered` flag of
/// eth0's device (as set by the profile, or guessed by NetworkManager: guess-no on ethernet, guess-yes from
/// DHCP option 43 ANDROID_METERED), follows its changes and picks NetworkManager up when it starts later;
/// the configuration still wins.
final class NetworkManagerIntegrationTests: XCTestCase {
    private var lab: NetLab!
    private var manager: RealNetworkManager?

    private static let address = "192.0.2.2/24"
    private static let gateway = "192.0.2.1"
    private static let manual = RealNetworkManager.IPv4.manual(address: address, gateway: gateway)

    override func setUpWithError() throws {
        lab = try NetLab.make()
        // eth0 without addresses: NetworkManager configures it from the profile (a link that already has an
        // address is taken over as an external, generated connection, not by the profile). The far end is
        // the gateway, and the DHCP server when there is one.
        try lab.addLink("eth0")
        try lab.peerIP("addr add \(Self.gateway)/24 dev eth0")
        manager = try RealNetworkManager(lab: lab)
    }

    override func tearDown() {
        lab?.stopDaemon()
        manager?.stop()
        lab?.tearDown()
    }

    private func startDaemon(config: String? = nil) throws {
        try lab.startDaemon(config: config, arguments: ["--networkmanager", "system"], environment: try XCTUnwrap(manager).environment)
    }

    /// Waits until reachd has logged NetworkManager's flags with `expected` (e.g. `eth0=no`) as the last ones.
    private func waitForLoggedFlags(_ expected: String, timeout: Double = 20) throws {
        let lastFlags = { self.lab.log.split(separator: "\n").last { $0.contains("NetworkManager metered flags") } }
        try eventually("reachd to log NetworkManager's flags \(expected)", timeout: timeout, detail: "last: \(lastFlags() ?? "none")") {
            lastFlags()?.contains("\"\(expected)\"") == true
        }
    }

    /// NetworkManager started with one profile for eth0, eth0 active: checks that NetworkManager itself
    /// reports `expected` as the device's Metered value before reachd is asked.
    @discardableResult
    private func activateEth0(metered: ManagerMetered?, ipv4: RealNetworkManager.IPv4 = manual, expected: ManagerMetered,
                              timeout: Double = 20, file: StaticString = #filePath, line: UInt = #line) throws -> RealNetworkManager {
        let manager = try XCTUnwrap(manager)
        try manager.addProfile("test-eth0", interface: "eth0", metered: metered, ipv4: ipv4)
        try manager.start()
        XCTAssertEqual(try manager.waitForActivation("eth0", timeout: timeout), expected.rawValue, file: file, line: line)
        return manager
    }

    /// connection.metered=1 → Device.Metered yes → metered, "NetworkManager: yes".
    func testMeteredYesProfile() throws {
        try activateEth0(metered: .yes, expected: .yes)
        try startDaemon()
        let subscriber = try lab.subscribe()
        let verdict = try subscriber.waitFor("metered by NetworkManager", timeout: 20) { $0.metered }.verdict
        XCTAssertTrue(verdict.reachable)
        XCTAssertEqual(verdict.status, .wired)
        XCTAssertEqual(verdict.interface, "eth0")
        XCTAssertEqual(verdict.meteredReason, "NetworkManager: yes")
        XCTAssertEqual(try lab.reachctl(["status"]).out, "reachable via wired (eth0), metered (NetworkManager: yes)\n")
    }

    /// connection.metered=2 → Device.Metered no → unmetered, and reachd did read it.
    func testMeteredNoProfile() throws {
        try activateEth0(metered: .no, expected: .no)
        try startDaemon()
        let subscriber = try lab.subscribe()
        try waitForLoggedFlags("eth0=no")
        let verdict = try subscriber.waitFor("reachable via eth0", timeout: 20) { $0.reachable && $0.interface == "eth0" }.verdict
        XCTAssertEqual(verdict.summary, "reachable via wired (eth0), unmetered")
        XCTAssertNil(verdict.meteredReason)
        XCTAssertEqual(try subscriber.drain(for: 0.5).filter(\.verdict.metered).count, 0)
        XCTAssertEqual(try lab.reachctl(["status"]).out, "reachable via wired (eth0), unmetered\n")
    }

    /// connection.metered unknown on ethernet: NetworkManager guesses no (4) → unmetered.
    func testUnknownOnEthernetIsGuessNo() throws {
        try activateEth0(metered: nil, expected: .guessNo)
        try startDaemon()
        let subscriber = try lab.subscribe()
        try waitForLoggedFlags("eth0=guess-no")
        let verdict = try subscriber.waitFor("reachable via eth0", timeout: 20) { $0.reachable && $0.interface == "eth0" }.verdict
        XCTAssertEqual(verdict.summary, "reachable via wired (eth0), unmetered")
        XCTAssertEqual(try subscriber.drain(for: 0.5).filter(\.verdict.metered).count, 0)
    }

    /// DHCP (dnsmasq on the far end) with option 43 ANDROID_METERED and metered unknown: guess-yes (3) → metered.
    func testDHCPAndroidMeteredIsGuessYes() throws {
        let manager = try XCTUnwrap(manager)
        try manager.startDHCPServer(on: "eth0", range: ("192.0.2.50", "192.0.2.99"), options: ["43,ANDROID_METERED"])
        try manager.addProfile("test-eth0", interface: "eth0", metered: nil, ipv4: .auto)
        try manager.start()
        XCTAssertEqual(try manager.waitForActivation("eth0", timeout: 45), ManagerMetered.guessYes.rawValue,
                       "dnsmasq: \(manager.dhcpLog.suffix(2000))")
        XCTAssertTrue(manager.dhcpLog.contains("DHCPACK(eth0)"), "the address came from dnsmasq")
        try startDaemon()
        let subscriber = try lab.subscribe()
        let verdict = try subscriber.waitFor("metered by NetworkManager's guess", timeout: 20) { $0.metered }.verdict
        XCTAssertEqual(verdict.summary, "reachable via wired (eth0), metered (NetworkManager: guess-yes)")
        XCTAssertEqual(verdict.meteredReason, "NetworkManager: guess-yes")
        XCTAssertEqual(try lab.reachctl(["status"]).out, "reachable via wired (eth0), metered (NetworkManager: guess-yes)\n")
    }

    /// A profile changed with nmcli (modify + reapply) while reachd runs: the subscriber sees each change.
    func testProfileChangeIsFollowed() throws {
        let manager = try activateEth0(metered: .yes, expected: .yes)
        try startDaemon()
        let subscriber = try lab.subscribe()
        try subscriber.waitFor("metered by NetworkManager", timeout: 20) { $0.metered }

        try manager.nmcli(["connection", "modify", "test-eth0", "connection.metered", "no"])
        try manager.nmcli(["device", "reapply", "eth0"])
        try manager.waitForMetered("eth0", .no)
        var verdict = try subscriber.waitFor("unmetered after nmcli", timeout: 20) { !$0.metered }.verdict
        XCTAssertEqual(verdict.summary, "reachable via wired (eth0), unmetered")
        XCTAssertNil(verdict.meteredReason)

        try manager.nmcli(["connection", "modify", "test-eth0", "connection.metered", "yes"])
        try manager.nmcli(["device", "reapply", "eth0"])
        try manager.waitForMetered("eth0", .yes)
        verdict = try subscriber.waitFor("metered again after nmcli", timeout: 20) { $0.metered }.verdict
        XCTAssertEqual(verdict.summary, "reachable via wired (eth0), metered (NetworkManager: yes)")
        XCTAssertEqual(try lab.reachctl(["status"]).out, "reachable via wired (eth0), metered (NetworkManager: yes)\n")
    }

    /// NetworkManager starting while reachd runs is picked up (NameOwnerChanged), and NetworkManager quitting
    /// hands the decision back to the interface kind. eth0 is configured by an earlier run of NetworkManager,
    /// which the second run takes over as it is (as when the service is restarted), so that only
    /// NetworkManager's presence changes while reachd watches.
    func testNetworkManagerStartingLaterIsPickedUp() throws {
        let manager = try activateEth0(metered: .yes, expected: .yes)
        manager.stopManager()

        try startDaemon()
        let subscriber = try lab.subscribe()
        XCTAssertEqual(subscriber.initial.verdict.summary, "reachable via wired (eth0), unmetered", "NetworkManager left eth0 configured")
        XCTAssertFalse(lab.log.contains("NetworkManager metered flags"), "no NetworkManager yet: \(lab.log)")
        XCTAssertFalse(lab.log.contains("bus cannot be used"), "reachd is on the private system bus: \(lab.log)")

        try manager.start()
        XCTAssertEqual(try manager.waitForActivation("eth0"), ManagerMetered.yes.rawValue)
        let verdict = try subscriber.waitFor("metered once NetworkManager is there", timeout: 20) { $0.metered }.verdict
        XCTAssertEqual(verdict.summary, "reachable via wired (eth0), metered (NetworkManager: yes)")

        manager.stopManager()
        let after = try subscriber.waitFor("unmetered once NetworkManager is gone", timeout: 20) { !$0.metered }.verdict
        XCTAssertEqual(after.summary, "reachable via wired (eth0), unmetered")
    }

    /// NetworkManager starting after reachd and activating eth0 from scratch: reachd follows the link through
    /// NetworkManager's takeover (which also sends IPv6 link messages, RTNLGRP_IPV6_IFINFO, without a carrier
    /// attribute) to "reachable, metered".
    func testActivationWhileReachdRuns() throws {
        let manager = try XCTUnwrap(manager)
        try manager.addProfile("test-eth0", interface: "eth0", metered: .yes, ipv4: Self.manual)
        try startDaemon()
        let subscriber = try lab.subscribe()
        XCTAssertFalse(subscriber.initial.verdict.reachable, "eth0 has no address before NetworkManager")

        try manager.start()
        XCTAssertEqual(try manager.waitForActivation("eth0"), ManagerMetered.yes.rawValue)
        try waitForLoggedFlags("eth0=yes")
        let verdict = try subscriber.waitFor("reachable and metered once NetworkManager activated eth0", timeout: 20) {
            $0.reachable && $0.metered
        }.verdict
        XCTAssertEqual(verdict.summary, "reachable via wired (eth0), metered (NetworkManager: yes)")
        XCTAssertEqual(try lab.reachctl(["status"]).out, "reachable via wired (eth0), metered (NetworkManager: yes)\n")
    }

    /// `[[interface]] match = "eth0" metered = false` wins over NetworkManager's yes.
    func testConfigurationWins() throws {
        try activateEth0(metered: .yes, expected: .yes)
        try startDaemon(config: "[[interface]]\nmatch = \"eth0\"\nmetered = false\n")
        let subscriber = try lab.subscribe()
        try waitForLoggedFlags("eth0=yes")
        try subscriber.waitFor("reachable via eth0", timeout: 20) { $0.reachable && $0.interface == "eth0" }
        XCTAssertEqual(try subscriber.drain(for: 1).filter(\.verdict.metered).count, 0)
        XCTAssertFalse(subscriber.initial.verdict.metered)
        XCTAssertEqual(subscriber.latest.verdict.summary, "reachable via wired (eth0), unmetered")
        XCTAssertEqual(try lab.reachctl(["status"]).out, "reachable via wired (eth0), unmetered\n")
    }
}
