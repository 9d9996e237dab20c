import Foundation
import ReachdModel
import ReachdNetlink
import XCTest

/// Classification input from a fake sysfs tree, as the daemon's --sysfs-root reads it.
final class SysfsReaderTests: XCTestCase {
    private var root = ""

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "reachd-sysfs-\(getpid())-\(UUID().uuidString)"
        let fm = FileManager.default
        for name in ["wlp1", "wwp2", "phy3", "wext4", "eth0", "enx5", "enx6", "bnep0", "enx7"] {
            try fm.createDirectory(atPath: "\(root)/class/net/\(name)", withIntermediateDirectories: true)
        }
        try "INTERFACE=wlp1\nDEVTYPE=wlan\nIFINDEX=3\n".write(toFile: "\(root)/class/net/wlp1/uevent", atomically: true, encoding: .utf8)
        try "DEVTYPE=wwan\n".write(toFile: "\(root)/class/net/wwp2/uevent", atomically: true, encoding: .utf8)
        try fm.createSymbolicLink(atPath: "\(root)/class/net/phy3/phy80211", withDestinationPath: "../../ieee80211/phy0")
        try fm.createDirectory(atPath: "\(root)/class/net/phy3/../../ieee80211/phy0", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: "\(root)/class/net/wext4/wireless", withIntermediateDirectories: true)
        try "INTERFACE=eth0\nIFINDEX=2\n".write(toFile: "\(root)/class/net/eth0/uevent", atomically: true, encoding: .utf8)
        // USB tethering: `device` is the USB interface, its `driver` links into the bus's drivers (the target need not exist).
        for (name, driver) in [("enx5", "ipheth"), ("enx6", "rndis_host"), ("enx7", "cdc_ether")] {
            try fm.createDirectory(atPath: "\(root)/class/net/\(name)/device", withIntermediateDirectories: true)
            try fm.createSymbolicLink(atPath: "\(root)/class/net/\(name)/device/driver", withDestinationPath: "../../../../bus/usb/drivers/\(driver)")
        }
        try "DEVTYPE=bluetooth\nINTERFACE=bnep0\n".write(toFile: "\(root)/class/net/bnep0/uevent", atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: root)
    }

    func testReadsDevtypeAndWirelessMarkers() {
        let reader = SysfsReader(root: root)
        XCTAssertEqual(reader.facts(for: "wlp1"), SysfsFacts(devtype: "wlan"))
        XCTAssertEqual(reader.facts(for: "wwp2"), SysfsFacts(devtype: "wwan"))
        XCTAssertEqual(reader.facts(for: "phy3"), SysfsFacts(hasPhy80211: true))
        XCTAssertEqual(reader.facts(for: "wext4"), SysfsFacts(hasWireless: true))
        XCTAssertEqual(reader.facts(for: "eth0"), SysfsFacts())
        XCTAssertEqual(reader.facts(for: "enx5"), SysfsFacts(driver: "ipheth"))
        XCTAssertEqual(reader.facts(for: "enx6"), SysfsFacts(driver: "rndis_host"))
        XCTAssertEqual(reader.facts(for: "bnep0"), SysfsFacts(devtype: "bluetooth"))
        XCTAssertEqual(reader.facts(for: "missing0"), .none)
        XCTAssertEqual(reader.facts(for: "../../etc"), .none)
    }

    func testFactsDriveTheClassifier() {
        let reader = SysfsReader(root: root)
        let classifier = InterfaceClassifier()
        func kind(_ name: String) -> InterfaceKind {
            classifier.classify(LinkInfo(index: 1, name: name, flags: [.up], linkKind: "veth", sysfs: reader.facts(for: name))).kind
        }
        XCTAssertEqual(kind("wlp1"), .wifi)
        XCTAssertEqual(kind("wwp2"), .wwan)
        XCTAssertEqual(kind("phy3"), .wifi)
        XCTAssertEqual(kind("wext4"), .wifi)
        XCTAssertEqual(kind("eth0"), .wired)
    }

    /// Tethering devices, as a fake sysfs tree shows them, are a guess of metered, the reason naming what decided it;
    /// a USB Ethernet adapter (cdc_ether, also in docks) is not.
    func testTetheringDevicesAreGuessedMetered() {
        let reader = SysfsReader(root: root)
        let classifier = InterfaceClassifier()
        func judged(_ name: String) -> InterfaceClass {
            classifier.classify(LinkInfo(index: 1, name: name, flags: [.up], sysfs: reader.facts(for: name)))
        }
        XCTAssertEqual(judged("enx5").meteredState, .guessYes)
        XCTAssertEqual(judged("enx5").meteredReason, "driver ipheth (iPhone USB tethering)")
        XCTAssertEqual(judged("enx6").meteredReason, "driver rndis_host (USB tethering)")
        XCTAssertEqual(judged("bnep0").meteredReason, "sysfs DEVTYPE=bluetooth (Bluetooth PAN)")
        XCTAssertEqual(judged("bnep0").meteredSource, .driver)
        XCTAssertEqual(judged("enx7").meteredState, .guessNo)
        XCTAssertFalse(judged("eth0").metered)
    }

    /// The byte counters of a link from its statistics files; anything but a decimal counter is no count.
    func testReadsTheByteCounters() throws {
        let reader = SysfsReader(root: root)
        // (rx_bytes, tx_bytes, count)
        let table: [(String?, String?, UInt64?)] = [
            ("1000\n", "234\n", 1234), ("0\n", "0\n", 0), ("18446744073709551615\n", "5\n", .max),
            (nil, "5\n", nil), ("12a\n", "5\n", nil), ("-1\n", "5\n", nil), ("\n", "5\n", nil),
            (String(repeating: "9", count: 100), "5\n", nil), ("18446744073709551616\n", "0\n", nil),
        ]
        let statistics = "\(root)/class/net/eth0/statistics"
        try FileManager.default.createDirectory(atPath: statistics, withIntermediateDirectories: true)
        for (received, sent, count) in table {
            for (name, text) in [("rx_bytes", received), ("tx_bytes", sent)] {
                unlink("\(statistics)/\(name)")
                try text?.write(toFile: "\(statistics)/\(name)", atomically: true, encoding: .utf8)
            }
            XCTAssertEqual(reader.byteCount(for: "eth0", index: 2), count, "\(received ?? "-") \(sent ?? "-")")
        }
        XCTAssertNil(reader.byteCount(for: "../eth0", index: 2))
        XCTAssertNil(reader.byteCount(for: "wlp1", index: 3), "no statistics")
    }

    /// A name that is another link's by now (a PPP link re-dialled between the snapshot and the read) gives no count.
    func testTheCountersAreOnlyThoseOfTheLinkAsked() throws {
        let reader = SysfsReader(root: root)
        let directory = "\(root)/class/net/ppp0"
        try FileManager.default.createDirectory(atPath: directory + "/statistics", withIntermediateDirectories: true)
        try "100\n".write(toFile: directory + "/statistics/rx_bytes", atomically: true, encoding: .utf8)
        try "20\n".write(toFile: directory + "/statistics/tx_bytes", atomically: true, encoding: .utf8)
        try "7\n".write(toFile: directory + "/ifindex", atomically: true, encoding: .utf8)
        XCTAssertEqual(reader.byteCount(for: "ppp0", index: 7), 120)
        XCTAssertNil(reader.byteCount(for: "ppp0", index: 5), "ppp0 is link 7 now")
    }
}

