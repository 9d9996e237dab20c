import ReachdModel
import XCTest

final class ClassifierTests: XCTestCase {
    private func classify(_ link: LinkInfo, rules: [InterfaceRule] = []) -> InterfaceClass {
        InterfaceClassifier(rules: rules).classify(link)
    }

    func testDetectionOrder() {
        let table: [(LinkInfo, InterfaceKind, String, Bool)] = [
            (Fixture.link(1, "net5", sysfs: SysfsFacts(devtype: "wlan")), .wifi, "sysfs DEVTYPE=wlan", false),
            (Fixture.link(1, "net5", sysfs: SysfsFacts(devtype: "wwan")), .wwan, "sysfs DEVTYPE=wwan", true),
            (Fixture.link(1, "net5", sysfs: SysfsFacts(hasPhy80211: true)), .wifi, "sysfs phy80211", false),
            (Fixture.link(1, "net5", sysfs: SysfsFacts(hasWireless: true)), .wifi, "sysfs wireless", false),
            (Fixture.link(1, "eth0", sysfs: SysfsFacts(devtype: "wlan")), .wifi, "sysfs DEVTYPE=wlan", false),
            (Fixture.link(1, "wlp2s0"), .wifi, "name wl*", false),
            (Fixture.link(1, "wwan0"), .wwan, "name ww*", true),
            (Fixture.link(1, "enp3s0"), .wired, "name en*", false),
            (Fixture.link(1, "eth1", kind: "veth"), .wired, "name eth*", false),
            (Fixture.link(1, "br0", kind: "bridge"), .other, "link kind bridge", false),
            (Fixture.link(1, "veth9", kind: "veth"), .other, "link kind veth", false),
            (Fixture.link(1, "lan0"), .wired, "ethernet hardware", false),
        ]
        for (link, kind, source, metered) in table {
            let result = classify(link)
            XCTAssertEqual(result.kind, kind, link.name)
            XCTAssertEqual(result.source, source, link.name)
            XCTAssertEqual(result.metered, metered, link.name)
            XCTAssertFalse(result.ignored, link.name)
        }
    }

    func testTunnelsAreTransientAndLoopbackIgnored() {
        for (name, kind, hardware) in [("wg0", "wireguard", LinkInfo.arpNone), ("tun0", "tun", LinkInfo.arpNone), ("ppp0", nil, LinkInfo.arpPPP)] {
            let result = classify(Fixture.link(9, name, kind: kind, hardware: hardware))
            XCTAssertEqual(result.kind, .other, name)
            XCTAssertTrue(result.transient, name)
        }
        let loopback = classify(Fixture.link(1, "lo", [.up, .running, .lowerUp, .loopback], hardware: LinkInfo.arpLoopback))
        XCTAssertTrue(loopback.ignored)
    }

    func testConfigurationComesFirst() {
        let rules = [
            InterfaceRule(match: "usb*", kind: .wwan),
            InterfaceRule(match: "wwan1", metered: false),
            InterfaceRule(match: "wlan*", metered: true),
            InterfaceRule(match: "docker*", ignore: true),
        ]
        let usb = classify(Fixture.link(5, "usb0"), rules: rules)
        XCTAssertEqual(usb.kind, .wwan)
        XCTAssertEqual(usb.source, "config: usb*")
        XCTAssertEqual(usb.meteredReason, "interface kind wwan")
        let unmeteredWWAN = classify(Fixture.link(6, "wwan1"), rules: rules)
        XCTAssertEqual(unmeteredWWAN.kind, .wwan)
        XCTAssertFalse(unmeteredWWAN.metered)
        XCTAssertNil(unmeteredWWAN.meteredReason)
        let tethered = classify(Fixture.link(7, "wlan0"), rules: rules)
        XCTAssertEqual(tethered.kind, .wifi)
        XCTAssertEqual(tethered.meteredReason, "config: wlan*")
        XCTAssertTrue(classify(Fixture.link(8, "docker0", kind: "bridge"), rules: rules).ignored)
        XCTAssertFalse(classify(Fixture.link(9, "eth0"), rules: rules).ignored)
    }

    func testNetworkManagerMeteredAfterConfigurationBeforeKind() {
        let classifier = InterfaceClassifier(rules: [InterfaceRule(match: "eth1", metered: false)])
        let table: [(String, ManagerMetered?, Bool, String?, Int)] = [
            ("eth0", .yes, true, "NetworkManager: yes", #line),
            ("eth0", .guessYes, true, "NetworkManager: guess-yes", #line),
            ("eth0", .unknown, false, nil, #line),
            ("eth0", nil, false, nil, #line),
            ("wwan0", .no, false, nil, #line),
            ("wwan0", .guessNo, false, nil, #line),
            ("wwan0", .unknown, true, "interface kind wwan", #line),
            ("eth1", .yes, false, nil, #line),
        ]
        for (name, manager, metered, reason, line) in table {
            let result = classifier.classify(Fixture.link(3, name), manager: manager)
            XCTAssertEqual(result.metered, metered, line: UInt(line))
            XCTAssertEqual(result.meteredReason, reason, line: UInt(line))
        }
    }

    /// Each source in the order of precedence, with the state, the source and the reason it gives.
    func testMeteredSourcesInOrderOfPrecedence() {
        let classifier = InterfaceClassifier(rules: [InterfaceRule(match: "cfg*", metered: false), InterfaceRule(match: "cfy*", metered: true)])
        let meteredLease = NetworkdLinkFacts(androidMetered: true), plainLease = NetworkdLinkFacts(androidMetered: false)
        let ipheth = SysfsFacts(driver: "ipheth"), rndis = SysfsFacts(driver: "rndis_host"), bluetooth = SysfsFacts(devtype: "bluetooth")
        let table: [(String, SysfsFacts, ManagerMetered?, NetworkdLinkFacts?, MeteredState, MeteredSource, String?, Int)] = [
            ("cfg0", rndis, .yes, meteredLease, .no, .config, nil, #line),
            ("cfy0", .none, .no, nil, .yes, .config, "config: cfy*", #line),
            ("eth0", rndis, .guessNo, meteredLease, .guessNo, .networkManager, nil, #line),
            ("eth0", .none, .unknown, meteredLease, .guessYes, .dhcp, "DHCP: ANDROID_METERED (networkd lease)", #line),
            ("eth0", ipheth, nil, plainLease, .guessYes, .driver, "driver ipheth (iPhone USB tethering)", #line),
            ("enx0", rndis, nil, nil, .guessYes, .driver, "driver rndis_host (USB tethering)", #line),
            ("bnep0", bluetooth, nil, nil, .guessYes, .driver, "sysfs DEVTYPE=bluetooth (Bluetooth PAN)", #line),
            ("enx0", SysfsFacts(driver: "cdc_ether"), nil, nil, .guessNo, .kind, nil, #line),
            ("wwan0", .none, nil, plainLease, .guessYes, .kind, "interface kind wwan", #line),
            ("eth0", .none, nil, plainLease, .guessNo, .dhcp, nil, #line),
            ("eth0", .none, nil, nil, .guessNo, .kind, nil, #line),
        ]
        for (name, sysfs, manager, networkd, state, source, reason, line) in table {
            let result = classifier.classify(Fixture.link(3, name, sysfs: sysfs), manager: manager, networkd: networkd)
            XCTAssertEqual(result.meteredState, state, line: UInt(line))
            XCTAssertEqual(result.meteredSource, source, line: UInt(line))
            XCTAssertEqual(result.metered, state == .yes || state == .guessYes, line: UInt(line))
            XCTAssertEqual(result.meteredReason, reason, line: UInt(line))
        }
    }

    /// `[metered] dhcp = false` and `tethering = false` silence those sources, and nothing else.
    func testSourcesTheConfigurationTurnedOffDoNotSpeak() {
        let lease = NetworkdLinkFacts(androidMetered: true)
        let quiet = InterfaceClassifier(meteredSources: [])
        XCTAssertEqual(quiet.classify(Fixture.link(3, "eth0"), networkd: lease).meteredState, .guessNo)
        XCTAssertEqual(quiet.classify(Fixture.link(3, "eth0", sysfs: SysfsFacts(driver: "ipheth"))).meteredState, .guessNo)
        XCTAssertEqual(quiet.classify(Fixture.link(3, "wwan0")).meteredSource, .kind)
        XCTAssertEqual(InterfaceClassifier(meteredSources: .dhcp).classify(Fixture.link(3, "eth0"), networkd: lease).meteredSource, .dhcp)
        XCTAssertEqual(InterfaceClassifier(meteredSources: .tethering).classify(Fixture.link(3, "eth0"), networkd: lease).meteredState, .guessNo)
    }

    /// The internet verdict takes the lease of the link it leaves on (by index) from the snapshot.
    func testTheInternetVerdictReadsTheLeaseOfItsLink() {
        var snapshot = NetworkSnapshot(links: [Fixture.link(2, "eth0")], addresses: [Fixture.v4(2, "192.0.2.2")],
                                       defaultRoutes: [Fixture.defaultRoute(via: "192.0.2.1", dev: 2)])
        XCTAssertEqual(InternetVerdict().verdict(for: snapshot).meteredState, .guessNo)
        let index: Int32 = 2
        snapshot.networkd[index] = NetworkdLinkFacts(androidMetered: true)
        let verdict = InternetVerdict().verdict(for: snapshot)
        XCTAssertTrue(verdict.metered)
        XCTAssertEqual(verdict.meteredState, .guessYes)
        XCTAssertEqual(verdict.meteredSource, .dhcp)
        snapshot.networkd = [index + 100: NetworkdLinkFacts(androidMetered: true)]
        XCTAssertFalse(InternetVerdict().verdict(for: snapshot).metered, "another link's lease")
    }
}
