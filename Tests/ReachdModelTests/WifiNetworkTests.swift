import ReachdModel
import XCTest

/// The Wi-Fi network a link is on (issue 50): its name as text, the readings of iwd and wpa_supplicant, the
/// `[[network]]` rules and where the beacon's hints stand among the metered sources.
final class WifiNetworkTests: XCTestCase {
    private let wlan = LinkInfo(index: 3, name: "wlan0", flags: [.up, .running, .lowerUp], sysfs: SysfsFacts(devtype: "wlan"))
    /// DD 08 00 50 F2 11, level fixed (02 00), no flags.
    private let networkCostFixed: [UInt8] = [0xDD, 0x08, 0x00, 0x50, 0xF2, 0x11, 0x02, 0x00, 0x00, 0x00]
    private let networkCostUnrestricted: [UInt8] = [0xDD, 0x08, 0x00, 0x50, 0xF2, 0x11, 0x01, 0x00, 0x00, 0x00]
    private let appleHotspot: [UInt8] = [0xDD, 0x0A, 0x00, 0x17, 0xF2, 0x06, 0x01, 0x01, 0x03, 0x03, 0x00, 0x00]
    private let ssidElement: [UInt8] = [0x00, 0x04] + Array("Cafe".utf8)

    private func network(_ ssid: String, bssid: String? = "02:00:00:00:00:01", elements: [UInt8] = []) -> WifiNetwork {
        let reading = WpaSupplicantReading(interface: "wlan0", state: "completed", ssid: Array(ssid.utf8),
                                           bssid: bssid.flatMap(WifiIdentity.bssid), elements: elements)
        return WifiStations.networks(wpaSupplicant: [reading])["wlan0"]!
    }

    func testNamesAreTheSSIDWhenItIsUTF8AndEscapedOtherwiseAndReadBack() throws {
        let cases: [([UInt8], String)] = [
            (Array("Home".utf8), "Home"),
            (Array("Café ☕".utf8), "Café ☕"),
            ([0x48, 0xFF, 0x00, 0x41], "H\\xff\\x00A"),
            (Array("a\\b".utf8), "a\\\\b"),
            (Array("a\\xffb".utf8), "a\\\\xffb"),
            ([0x1B, 0x5D], "\\x1b]"),
            (Array("Phone".utf8) + [0x00, 0x78], "Phone\\x00x"),
            (Array("Café".utf8) + [0x7F], "Caf\\xc3\\xa9\\x7f"),
        ]
        for (ssid, name) in cases {
            let identity = try XCTUnwrap(WifiIdentity(ssid: ssid))
            XCTAssertEqual(identity.name, name, "\(ssid)")
            XCTAssertEqual(WifiIdentity.ssid(name: identity.name), ssid, name)
            XCTAssertEqual(WifiIdentity.bytes(hex: identity.ssidHex), ssid, name)
        }
        XCTAssertNil(WifiIdentity(ssid: []))
        XCTAssertNil(WifiIdentity(ssid: Array(repeating: 0x41, count: 33)))
        XCTAssertNil(WifiIdentity(ssid: [0x41], bssid: [1, 2, 3]))
        for text in ["bad \\x4", "\\x41", "\\xFF", "é\\x00", ""] {
            XCTAssertNil(WifiIdentity.ssid(name: text), "\(text) is no SSID's name")
        }
        XCTAssertEqual(WifiIdentity.bssid("02:1A:11:f0:00:01"), [0x02, 0x1A, 0x11, 0xF0, 0x00, 0x01])
        for bad in ["02:1a:11:f0:00", "02:1a:11:f0:00:01:02", "021a:11:f0:00:01", "0g:1a:11:f0:00:01", "+f:1a:11:f0:00:01", "-0:1a:11:f0:00:01", ""] {
            XCTAssertNil(WifiIdentity.bssid(bad), bad)
        }
    }

    func testWpaSupplicantsInterfacesGiveANetworkWhileJoined() {
        let readings = [
            WpaSupplicantReading(interface: "wlan0", state: "completed", ssid: Array("Cafe".utf8), bssid: [2, 0, 0, 0, 0, 1],
                                 elements: ssidElement + networkCostFixed),
            WpaSupplicantReading(interface: "wlan1", state: "scanning", ssid: Array("Other".utf8)),
            WpaSupplicantReading(interface: "wlan5", state: "4way_handshake", ssid: Array("Renewing".utf8)),
            WpaSupplicantReading(interface: "wlan2", state: "completed", ssid: Array("NoBSSID".utf8), bssid: [1, 2, 3]),
            WpaSupplicantReading(interface: "wlan3", state: "completed", ssid: []),
            WpaSupplicantReading(interface: "bad/name", state: "completed", ssid: Array("x".utf8)),
            WpaSupplicantReading(interface: "wlan4", state: "completed", ssid: Array("Big".utf8), elements: Array(repeating: 0, count: 4097)),
        ]
        let networks = WifiStations.networks(wpaSupplicant: readings)
        XCTAssertEqual(networks.keys.sorted(), ["wlan0", "wlan2", "wlan4"], "a first join shows nothing until completed")
        let renewing = WifiStations.networks(wpaSupplicant: readings, previous: ["wlan5": network("Renewing")])
        XCTAssertEqual(renewing.keys.sorted(), ["wlan0", "wlan2", "wlan4", "wlan5"], "a key renewal keeps the network it was on")
        XCTAssertNil(WifiStations.networks(wpaSupplicant: readings, previous: ["wlan5": network("Other")])["wlan5"], "not another one")
        XCTAssertEqual(networks["wlan0"]?.identity.bssidText, "02:00:00:00:00:01")
        XCTAssertEqual(networks["wlan0"]?.hints.meteredState, .guessYes, "the Network Cost element after the SSID's")
        XCTAssertEqual(networks["wlan0"]?.daemon, .wpaSupplicant)
        XCTAssertNil(networks["wlan2"]?.identity.bssid, "a BSSID that is not six bytes is left out")
        XCTAssertEqual(networks["wlan4"]?.hints, WifiHints(), "elements over 4096 bytes give no hint")
        let many = (0..<40).map { WpaSupplicantReading(interface: "wl\($0)", state: "completed", ssid: Array("n".utf8)) }
        XCTAssertEqual(WifiStations.networks(wpaSupplicant: many).count, WifiStations.maximumInterfaces)
    }

    func testIwdsStationsGiveANetworkWhileConnectedOrRoaming() {
        let readings = [
            IwdStationReading(interface: "wlan0", state: "connected", networkName: "Home", bssid: "02:00:00:00:00:02"),
            IwdStationReading(interface: "wlan1", state: "roaming", networkName: "Office"),
            IwdStationReading(interface: "wlan2", state: "connecting", networkName: "Cafe"),
            IwdStationReading(interface: "wlan3", state: "connected", networkName: nil),
            IwdStationReading(interface: "wlan4", state: "connected", networkName: String(repeating: "x", count: 33)),
        ]
        let networks = WifiStations.networks(iwd: readings)
        XCTAssertEqual(networks.keys.sorted(), ["wlan0", "wlan1"])
        XCTAssertEqual(networks["wlan0"]?.identity.name, "Home")
        XCTAssertEqual(networks["wlan0"]?.identity.bssidText, "02:00:00:00:00:02")
        XCTAssertEqual(networks["wlan0"]?.hints, WifiHints(), "iwd gives no elements")
        XCTAssertNil(networks["wlan1"]?.identity.bssid)
    }

    /// The order docs/metered.md states: network rule, interface rule, NetworkManager, Wi-Fi hint, DHCP, tethering, kind.
    func testTheNetworksRuleComesFirstAndTheHintsBelowNetworkManager() {
        var snapshot = NetworkSnapshot(links: [wlan])
        let home = network("Home", elements: networkCostFixed)
        snapshot.wifi["wlan0"] = home
        let homeRule = NetworkRule(ssid: Array("Home".utf8), metered: false)
        let interfaceRule = InterfaceRule(match: "wlan*", metered: true)
        let decide = { (classifier: InterfaceClassifier, snapshot: NetworkSnapshot) -> (MeteredState, MeteredSource?, String?) in
            let judged = classifier.classify(self.wlan, in: snapshot)
            return (judged.meteredState, judged.meteredSource, judged.meteredReason)
        }
        // The hint alone: guess-yes.
        XCTAssertTrue(decide(InterfaceClassifier(), snapshot) == (.guessYes, .wifiHint, "Wi-Fi hint: Network Cost fixed"))
        // `[metered] wifi_hints = false`: the kind.
        XCTAssertTrue(decide(InterfaceClassifier(meteredSources: [.dhcp, .tethering]), snapshot) == (.guessNo, .kind, nil))
        // The interface rule beats the hint; the network's rule beats both.
        XCTAssertTrue(decide(InterfaceClassifier(rules: [interfaceRule]), snapshot) == (.yes, .config, "config: wlan*"))
        XCTAssertTrue(decide(InterfaceClassifier(rules: [interfaceRule], networkRules: [homeRule]), snapshot) == (.no, .networkRule, nil))
        // NetworkManager beats the hint, not the rules.
        snapshot.managerMetered["wlan0"] = .guessNo
        XCTAssertTrue(decide(InterfaceClassifier(), snapshot) == (.guessNo, .networkManager, nil))
        snapshot.managerMetered["wlan0"] = nil
        // The hint beats networkd's DHCP lease.
        snapshot.networkd[3] = NetworkdLinkFacts(androidMetered: false)
        XCTAssertTrue(decide(InterfaceClassifier(), snapshot) == (.guessYes, .wifiHint, "Wi-Fi hint: Network Cost fixed"))
        // An unrestricted Network Cost says guess-no; an Apple hotspot guess-yes.
        snapshot.wifi["wlan0"] = network("Cafe", elements: networkCostUnrestricted)
        XCTAssertTrue(decide(InterfaceClassifier(), snapshot) == (.guessNo, .wifiHint, nil))
        snapshot.wifi["wlan0"] = network("iPhone", elements: appleHotspot)
        XCTAssertTrue(decide(InterfaceClassifier(), snapshot) == (.guessYes, .wifiHint, "Wi-Fi hint: Apple Personal Hotspot"))
        // A rule for another network does not apply; a rule on its BSSID does.
        XCTAssertEqual(decide(InterfaceClassifier(networkRules: [homeRule]), snapshot).1, .wifiHint)
        let byBSSID = NetworkRule(bssid: WifiIdentity.bssid("02:00:00:00:00:01"), metered: false)
        XCTAssertTrue(decide(InterfaceClassifier(networkRules: [byBSSID]), snapshot) == (.no, .networkRule, nil))
    }

    func testANetworksRuleSetsTheKindAndCanIgnoreTheLink() {
        var snapshot = NetworkSnapshot(links: [wlan])
        snapshot.wifi["wlan0"] = network("Phone")
        let phone = NetworkRule(ssid: Array("Phone".utf8), kind: .wwan)
        let judged = InterfaceClassifier(rules: [InterfaceRule(match: "wlan0", kind: .wired)], networkRules: [phone]).classify(wlan, in: snapshot)
        XCTAssertEqual(judged.kind, .wwan)
        XCTAssertEqual(judged.source, "network rule: ssid \"Phone\"")
        XCTAssertEqual(judged.meteredState, .guessYes, "the kind wwan, from the network's rule")
        let ignored = NetworkRule(ssid: Array("Phone".utf8), bssid: WifiIdentity.bssid("02:00:00:00:00:01"), ignore: true)
        XCTAssertTrue(InterfaceClassifier(networkRules: [ignored]).classify(wlan, in: snapshot).ignored)
        let otherAccessPoint = NetworkRule(ssid: Array("Phone".utf8), bssid: WifiIdentity.bssid("02:00:00:00:00:09"), ignore: true)
        XCTAssertFalse(InterfaceClassifier(networkRules: [otherAccessPoint]).classify(wlan, in: snapshot).ignored, "both parts must match")
        XCTAssertFalse(NetworkRule().matches(snapshot.wifi["wlan0"]!.identity), "a rule naming nothing matches nothing")
    }

    func testTheVerdictNamesTheNetworkAndTheRuleThatSaidUnmetered() {
        var snapshot = NetworkSnapshot(
            links: [wlan], addresses: [InterfaceAddress(interfaceIndex: 3, address: IPAddress("192.0.2.5")!, prefixLength: 24)],
            defaultRoutes: [Route(family: .ipv4, nexthops: [Nexthop(interfaceIndex: 3, gateway: IPAddress("192.0.2.1"))])])
        snapshot.wifi["wlan0"] = network("Home", elements: networkCostFixed)
        let judge = { (rules: [NetworkRule]) in InternetVerdict(classifier: InterfaceClassifier(networkRules: rules)).verdict(for: snapshot) }
        let hinted = judge([])
        XCTAssertEqual(hinted.wifiNetwork, snapshot.wifi["wlan0"]?.identity)
        XCTAssertEqual(hinted.summary, "reachable via WiFi (wlan0, \"Home\"), metered (Wi-Fi hint: Network Cost fixed)")
        let ruled = judge([NetworkRule(ssid: Array("Home".utf8), metered: false)])
        XCTAssertEqual(ruled.summary, "reachable via WiFi (wlan0, \"Home\"), unmetered (network rule)")
        XCTAssertEqual(ruled.meteredSource, .networkRule)
    }
}
