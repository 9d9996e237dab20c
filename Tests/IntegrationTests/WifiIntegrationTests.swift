import Foundation
import ReachdModel
import XCTest

/// The Wi-Fi network a link is on, from iwd and wpa_supplicant (issue 50), against mocks of their D-Bus objects
/// (`WifiDaemonMocks`) on a private bus that reachd reads as its system bus: `wlan0` is a veth link in the lab
/// carrying the default route. Each daemon starts after reachd and stops under it.
final class WifiIntegrationTests: XCTestCase {
    private var lab: NetLab!
    private var bus: PrivateBus?
    private var iwd: IwdMock?
    private var wpaSupplicant: WpaSupplicantMock?

    override func setUpWithError() throws {
        lab = try NetLab.make()
        let directory = lab.directory + "/wifi"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The installed policy for iwd (dbus/reachd-wifi.conf), which the bus checks, for the lab's user.
        let bus = try PrivateBus(directory: directory, policies: ["reachd-wifi.conf"], users: ["reachd": NSUserName()])
        self.bus = bus
        iwd = IwdMock(bus: bus, directory: directory)
        wpaSupplicant = WpaSupplicantMock(bus: bus, directory: directory)
        try lab.addUplink("wlan0", "10.80.0", metric: 100)
    }

    override func tearDown() {
        lab?.stopDaemon()
        iwd?.tearDown()
        wpaSupplicant?.tearDown()
        bus?.stop()
        lab?.tearDown()
    }

    /// reachd reading the private bus as its system bus (NetworkManager absent there) and serving its D-Bus face on it.
    private func startDaemon(config: String, arguments: [String] = []) throws {
        try lab.startDaemon(config: config, arguments: ["--networkmanager", "system", "--bus", "system"] + arguments,
                            environment: ["DBUS_SYSTEM_BUS_ADDRESS": try XCTUnwrap(bus).address])
    }

    /// `busctl get-property`'s answer on the private bus, e.g. `s "Phone"`; reachd's own object by default.
    private func property(_ name: String, of service: String = "org.reachd.Reachability1", path: String = "/org/reachd/Reachability1",
                          interface: String = "org.reachd.Reachability1") throws -> String {
        try CommandLineIntegrationTests.run("/usr/bin/busctl", [
            "--address=\(try XCTUnwrap(bus).address)", "get-property", service, path, interface, name,
        ]).out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testIwdsNetworkIsInTheVerdictAndANetworkRuleBeatsTheInterfaceRule() throws {
        try startDaemon(config: """
            [[interface]]
            match = "wlan*"
            metered = false
            [[network]]
            ssid = "Phone"
            metered = true
            """, arguments: ["--networkmanager-face", "system"])
        let subscriber = try lab.subscribe()
        let before = try subscriber.waitFor("reachable via wlan0") { $0.reachable && $0.interface == "wlan0" }.verdict
        XCTAssertNil(before.wifiNetwork, "no Wi-Fi daemon yet")
        XCTAssertEqual(before.meteredSource, .config)

        let iwd = try XCTUnwrap(iwd)
        try iwd.start()
        try iwd.addStation(interface: "wlan0")
        try iwd.join(interface: "wlan0", name: "Home", type: "psk", bssid: "02:11:22:33:44:55")
        let home = try subscriber.waitFor("on Home") { $0.wifiNetwork?.name == "Home" && $0.wifiNetwork?.bssid != nil }.verdict
        XCTAssertEqual(home.wifiNetwork?.bssidText, "02:11:22:33:44:55")
        XCTAssertEqual(home.meteredSource, .config, "no rule names Home: the interface's rule decides")
        XCTAssertEqual(try lab.reachctl(["status"]).out, "reachable via WiFi (wlan0, \"Home\"), unmetered\n")

        try iwd.roam(interface: "wlan0", bssid: "02:11:22:33:44:66")
        XCTAssertEqual(try subscriber.waitFor("roamed") { $0.wifiNetwork?.bssidText == "02:11:22:33:44:66" }.verdict.wifiNetwork?.name, "Home")
        try iwd.leave(interface: "wlan0")
        try subscriber.waitFor("left Home") { $0.reachable && $0.wifiNetwork == nil }

        try iwd.join(interface: "wlan0", name: "Phone", type: "psk", bssid: "02:aa:bb:cc:dd:ee")
        let phone = try subscriber.waitFor("on Phone") { $0.wifiNetwork?.name == "Phone" && $0.metered }.verdict
        XCTAssertEqual(phone.meteredState, .yes)
        XCTAssertEqual(phone.meteredSource, .networkRule, "the network's rule beats the interface's")
        XCTAssertEqual(try lab.reachctl(["status"]).out, "reachable via WiFi (wlan0, \"Phone\"), metered (network rule: ssid \"Phone\")\n")
        let json = try lab.reachctl(["--json", "status"]).out
        XCTAssertTrue(json.contains(#""wifiNetwork":{"bssid":"02:aa:bb:cc:dd:ee","name":"Phone","ssidHex":"50686f6e65"}"#), json)
        try XCTUnwrap(bus).waitForOwner(of: "org.reachd.Reachability1")
        try eventually("the D-Bus properties to name Phone") { try self.property("WifiNetwork") == "s \"Phone\"" }
        XCTAssertEqual(try property("WifiBSSID"), "s \"02:aa:bb:cc:dd:ee\"")
        XCTAssertEqual(try property("MeteredSource"), "s \"network rule\"")
        // The NetworkManager face: a Wi-Fi primary connection named as the network, where nmcli and Qt read it.
        let manager = { (name: String) in
            try self.property(name, of: "org.freedesktop.NetworkManager", path: "/org/freedesktop/NetworkManager",
                              interface: "org.freedesktop.NetworkManager")
        }
        try eventually("the face's primary connection to be Phone's") {
            let primary = try manager("PrimaryConnection").split(separator: "\"").dropFirst().first.map(String.init) ?? "/"
            return try primary != "/" && self.property("Id", of: "org.freedesktop.NetworkManager", path: primary,
                                                       interface: "org.freedesktop.NetworkManager.Connection.Active") == "s \"Phone\""
        }
        XCTAssertEqual(try manager("PrimaryConnectionType"), "s \"802-11-wireless\"")

        // iwd stops under reachd: no network is known, the interface's rule decides again; back, it is followed again.
        iwd.stop()
        let gone = try subscriber.waitFor("iwd gone") { $0.reachable && $0.wifiNetwork == nil }.verdict
        XCTAssertEqual(gone.meteredSource, .config)
        XCTAssertFalse(gone.metered)
        try iwd.start()
        try iwd.addStation(interface: "wlan0")
        try iwd.join(interface: "wlan0", name: "Phone", type: "psk", bssid: "02:aa:bb:cc:dd:ee")
        XCTAssertEqual(try subscriber.waitFor("iwd back") { $0.wifiNetwork?.name == "Phone" }.verdict.meteredSource, .networkRule)
    }

    /// A budget that names a network counts the link only while it is on that network: bytes sent at home never count
    /// in the phone's budget, and the phone's count goes on when the link comes back to it.
    func testABudgetPerNetwork() throws {
        let state = lab.directory + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        // The real /sys of the lab's namespace, for the real counters (BudgetIntegrationTests).
        try startDaemon(config: """
            [[budget]]
            network = "Phone"
            limit = 200000
            period = "day"
            """, arguments: ["--sysfs-root", "/sys", "--state-directory", state])
        // A permanent neighbour whose MAC nobody has: frames to it leave the host namespace (counted), unanswered.
        try lab.ip("neigh replace 10.80.0.9 lladdr 02:00:00:00:00:09 dev wlan0 nud permanent")
        let send = { (count: Int) in
            let script = "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                + "for _ in range(\(count)): s.sendto(b'x' * 1400, ('10.80.0.9', 9))\n"
            try script.write(toFile: self.lab.directory + "/send.py", atomically: true, encoding: .utf8)
            try self.lab.inHost("/usr/bin/python3 \(self.lab.directory)/send.py")
        }
        let subscriber = try lab.subscribe()
        let iwd = try XCTUnwrap(iwd)
        try iwd.start()
        try iwd.addStation(interface: "wlan0")
        try iwd.join(interface: "wlan0", name: "Phone", type: "psk", bssid: "02:aa:bb:cc:dd:ee")
        XCTAssertEqual(try subscriber.waitFor("the phone's budget") { $0.budget != nil }.verdict.budget?.state, .below)
        // 120 datagrams of 1442 bytes on the wire: 173,040 bytes, over the approaching share (160,000).
        try send(120)
        let approaching = try subscriber.waitFor("approaching on the phone") { $0.budget?.state == .approaching }.verdict
        XCTAssertEqual(approaching.wifiNetwork?.name, "Phone")
        try iwd.leave(interface: "wlan0")
        try iwd.join(interface: "wlan0", name: "Home", type: "psk", bssid: "02:11:22:33:44:55")
        XCTAssertNil(try subscriber.waitFor("at home") { $0.wifiNetwork?.name == "Home" }.verdict.budget, "no budget names Home")
        // 200 datagrams at home: 288,400 bytes that would put the phone's budget over its limit.
        try send(200)
        // Leaving Home is sampled at once: the bytes count for Home, which has no budget.
        try iwd.leave(interface: "wlan0")
        try iwd.join(interface: "wlan0", name: "Phone", type: "psk", bssid: "02:aa:bb:cc:dd:ee")
        let back = try subscriber.waitFor("the phone again") { $0.wifiNetwork?.name == "Phone" && $0.budget != nil }.verdict
        XCTAssertEqual(back.budget?.state, .approaching, "what moved at home does not count: \(String(describing: back.budget))")
        XCTAssertLessThan(back.budget?.usedBytes ?? .max, 200_000)
        XCTAssertGreaterThanOrEqual(back.budget?.usedBytes ?? 0, 173_040)
        // Bytes sent just before the link leaves for no network count for the phone: leaving is sampled at once, and
        // the link is read though it is on no network by then. 30 datagrams: 43,260 bytes, over the limit.
        try send(30)
        try iwd.leave(interface: "wlan0")
        try subscriber.waitFor("off the phone") { $0.reachable && $0.wifiNetwork == nil && $0.budget == nil }
        try iwd.join(interface: "wlan0", name: "Phone", type: "psk", bssid: "02:aa:bb:cc:dd:ee")
        let over = try subscriber.waitFor("over on the phone") { $0.wifiNetwork?.name == "Phone" && $0.budget?.state == .over }.verdict
        XCTAssertLessThan(over.budget?.usedBytes ?? .max, 288_400, "nothing of Home's")
    }

    /// SSID element, then the hint's element, then an HT Capabilities element: the hint stands in the middle.
    private func elements(_ ssid: [UInt8], _ hint: [UInt8]) -> [UInt8] {
        [0x00, UInt8(ssid.count)] + ssid + hint + [0x2D, 0x02, 0xEF, 0x01]
    }

    private static let networkCostFixed: [UInt8] = [0xDD, 0x08, 0x00, 0x50, 0xF2, 0x11, 0x02, 0x00, 0x00, 0x00]
    private static let networkCostUnrestricted: [UInt8] = [0xDD, 0x08, 0x00, 0x50, 0xF2, 0x11, 0x01, 0x00, 0x00, 0x00]
    private static let appleHotspot: [UInt8] = [0xDD, 0x0A, 0x00, 0x17, 0xF2, 0x06, 0x01, 0x01, 0x03, 0x03, 0x00, 0x00]

    func testWpaSupplicantsBeaconHintsWithAndWithoutARule() throws {
        try startDaemon(config: """
            [[network]]
            ssid = "Cafe"
            metered = false
            [[network]]
            bssid = "02:00:00:00:00:0a"
            metered = false
            """)
        let subscriber = try lab.subscribe()
        let before = try subscriber.waitFor("reachable via wlan0") { $0.reachable && $0.interface == "wlan0" }.verdict
        XCTAssertEqual(before.meteredSource, .kind)

        let wpa = try XCTUnwrap(wpaSupplicant)
        try wpa.start()
        try wpa.addInterface("wlan0")
        // An iPhone's hotspot: no rule names it.
        let iPhone = Array("iPhone".utf8)
        try wpa.join("wlan0", ssid: iPhone, bssid: [0x02, 0, 0, 0, 0, 0x09], elements: elements(iPhone, Self.appleHotspot))
        let hotspot = try subscriber.waitFor("the iPhone's hint") { $0.wifiNetwork?.name == "iPhone" }.verdict
        XCTAssertEqual(hotspot.meteredState, .guessYes)
        XCTAssertEqual(hotspot.meteredSource, .wifiHint)
        XCTAssertEqual(hotspot.meteredReason, "Wi-Fi hint: Apple Personal Hotspot")
        // The same hotspot through an access point a rule names by its BSSID: the rule beats the hint.
        try wpa.roam("wlan0", bssid: [0x02, 0, 0, 0, 0, 0x0A], elements: elements(iPhone, Self.appleHotspot))
        let ruled = try subscriber.waitFor("the BSSID's rule") { $0.wifiNetwork?.bssidText == "02:00:00:00:00:0a" }.verdict
        XCTAssertEqual(ruled.meteredState, .no)
        XCTAssertEqual(ruled.meteredSource, .networkRule)
        try wpa.leave("wlan0")
        XCTAssertEqual(try subscriber.waitFor("left") { $0.reachable && $0.wifiNetwork == nil }.verdict.meteredSource, .kind)

        // A Network Cost element saying fixed, under a rule and without one.
        let cafe = Array("Cafe".utf8)
        try wpa.join("wlan0", ssid: cafe, bssid: [0x02, 0, 0, 0, 0, 0x0B], elements: elements(cafe, Self.networkCostFixed))
        let cafeVerdict = try subscriber.waitFor("Cafe") { $0.wifiNetwork?.name == "Cafe" }.verdict
        XCTAssertEqual(cafeVerdict.meteredSource, .networkRule)
        XCTAssertEqual(try lab.reachctl(["status"]).out, "reachable via WiFi (wlan0, \"Cafe\"), unmetered (network rule)\n")
        // A name that would drive a terminal: the wire carries it exactly, reachctl shows its escape as text.
        let shop = Array("Shop\u{1B}]0;owned\u{07}".utf8)
        try wpa.join("wlan0", ssid: shop, bssid: [0x02, 0, 0, 0, 0, 0x0C], elements: elements(shop, Self.networkCostFixed))
        let shopVerdict = try subscriber.waitFor("Shop") { $0.wifiNetwork?.ssid == shop }.verdict
        XCTAssertEqual(shopVerdict.meteredState, .guessYes)
        XCTAssertEqual(shopVerdict.meteredReason, "Wi-Fi hint: Network Cost fixed")
        XCTAssertEqual(try lab.reachctl(["status"]).out,
                       "reachable via WiFi (wlan0, \"Shop\\x1b]0;owned\\x07\"), metered (Wi-Fi hint: Network Cost fixed)\n")
        // The access point's beacon changes its word (a roam to one saying unrestricted).
        try wpa.roam("wlan0", bssid: [0x02, 0, 0, 0, 0, 0x0D], elements: elements(shop, Self.networkCostUnrestricted))
        let unrestricted = try subscriber.waitFor("unrestricted") { $0.wifiNetwork?.bssidText == "02:00:00:00:00:0d" }.verdict
        XCTAssertEqual(unrestricted.meteredState, .guessNo)
        XCTAssertEqual(unrestricted.meteredSource, .wifiHint)
        // The same access point's beacon says fixed now.
        try wpa.changeElements("wlan0", elements(shop, Self.networkCostFixed))
        XCTAssertEqual(try subscriber.waitFor("the beacon's new word") { $0.metered }.verdict.wifiNetwork?.bssidText, "02:00:00:00:00:0d")

        // wpa_supplicant stops under reachd: the kind decides again; back, it is followed again.
        wpa.stop()
        XCTAssertEqual(try subscriber.waitFor("wpa_supplicant gone") { $0.reachable && $0.wifiNetwork == nil }.verdict.meteredSource, .kind)
        try wpa.start()
        try wpa.addInterface("wlan0")
        try wpa.join("wlan0", ssid: iPhone, bssid: [0x02, 0, 0, 0, 0, 0x09], elements: elements(iPhone, Self.appleHotspot))
        XCTAssertEqual(try subscriber.waitFor("wpa_supplicant back") { $0.wifiNetwork?.name == "iPhone" }.verdict.meteredSource, .wifiHint)
    }
}
