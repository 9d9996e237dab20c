import Foundation
import ReachdModel
import XCTest

/// The metered sources below NetworkManager through the daemon: networkd's DHCP lease followed live from its
/// state directory (a tree of the test's own, written as networkd writes it), tethering drivers from a fake
/// sysfs tree, and a captive portal networkd recorded for the link.
final class MeteredSourcesIntegrationTests: XCTestCase {
    private var lab: NetLab!
    private let lease = "# This is private data. Do not parse.\nADDRESS=192.0.2.2\nNETMASK=255.255.255.0\nROUTER=192.0.2.1\nT1=1800\n"

    override func setUpWithError() throws {
        lab = try NetLab.make()
    }

    override func tearDown() {
        lab?.tearDown()
    }

    /// A phone's hotspot: the lease's option 43 says ANDROID_METERED; a renewal without it, and the lease's loss,
    /// are followed by the same daemon, each as one event.
    func testTheDHCPLeaseIsFollowedLive() throws {
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.networkdFile("leases", of: "eth0", lease + "VENDOR_SPECIFIC=414e44524f49445f4d455445524544\n")
        try lab.startDaemon()
        let subscriber = try lab.subscribe()
        let first = subscriber.initial.verdict
        XCTAssertTrue(first.metered, first.summary)
        XCTAssertEqual(first.meteredState, .guessYes)
        XCTAssertEqual(first.meteredSource, .dhcp)
        XCTAssertEqual(first.meteredReason, "DHCP: ANDROID_METERED (networkd lease)")

        try lab.networkdFile("leases", of: "eth0", lease)
        let renewed = try subscriber.waitFor("the renewal without option 43") { !$0.metered }.verdict
        XCTAssertEqual(renewed.meteredState, .guessNo)
        XCTAssertEqual(renewed.meteredSource, .dhcp)

        try lab.networkdFile("leases", of: "eth0", lease + "VENDOR_SPECIFIC=2b0f414e44524f49445f4d455445524544ff\n")
        try subscriber.waitFor("ANDROID_METERED inside other vendor options") { $0.meteredSource == .dhcp && $0.metered }
        try lab.networkdFile("leases", of: "eth0", nil)
        let lost = try subscriber.waitFor("the lease gone") { $0.meteredSource == .kind }.verdict
        XCTAssertEqual(lost.meteredState, .guessNo)
        XCTAssertEqual(try lab.reachctl(["wait", "--unmetered", "--timeout", "10"]).status, 0)
    }

    /// `[metered] dhcp = false`: the lease is not read for metering.
    func testTheDHCPSourceCanBeTurnedOff() throws {
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.networkdFile("leases", of: "eth0", lease + "VENDOR_SPECIFIC=414e44524f49445f4d455445524544\n")
        try lab.startDaemon(config: "[metered]\ndhcp = false\n")
        let verdict = try lab.subscribe().initial.verdict
        XCTAssertFalse(verdict.metered, verdict.summary)
        XCTAssertEqual(verdict.meteredSource, .kind)
    }

    /// Android USB tethering (rndis_host) is a guess of metered, named in the reason; the driver is read from sysfs.
    func testATetheringDriverIsGuessedMetered() throws {
        try lab.addUplink("usb0", "192.0.2", metric: 100)
        let device = "\(lab.sysfsRoot)/class/net/usb0/device"
        try FileManager.default.createDirectory(atPath: device, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: device + "/driver", withDestinationPath: "../../../../bus/usb/drivers/rndis_host")
        try lab.startDaemon()
        let verdict = try lab.subscribe().initial.verdict
        XCTAssertTrue(verdict.metered, verdict.summary)
        XCTAssertEqual(verdict.meteredState, .guessYes)
        XCTAssertEqual(verdict.meteredSource, .driver)
        XCTAssertEqual(verdict.meteredReason, "driver rndis_host (USB tethering)")
    }

    /// A captive-portal API networkd recorded for the link shows in the verdict (with no answer while the API cannot
    /// be reached); a plain-http announcement and the "unrestricted" URN do not.
    func testAnAnnouncedCaptivePortalShowsInTheVerdict() throws {
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.startDaemon()
        let subscriber = try lab.subscribe()
        XCTAssertNil(subscriber.initial.verdict.captivePortal)
        try lab.networkdFile("links", of: "eth0", "ADMIN_STATE=configured\nCAPTIVE_PORTAL=https://192.0.2.1:9/capport\n")
        let announced = try subscriber.waitFor("the announced portal") { $0.captivePortal != nil }.verdict
        XCTAssertEqual(announced.captivePortal?.apiURL, "https://192.0.2.1:9/capport")
        XCTAssertNil(announced.captivePortal?.captive, "no answer from a closed port")
        XCTAssertEqual(announced.connectivity, .unknown)
        try lab.networkdFile("links", of: "eth0", "CAPTIVE_PORTAL=http://192.0.2.1/capport\n")
        try subscriber.waitFor("plain http is not taken") { $0.captivePortal == nil }
        try lab.networkdFile("links", of: "eth0", "CAPTIVE_PORTAL=urn:ietf:params:capport:unrestricted\n")
        try lab.networkdFile("links", of: "eth0", "CAPTIVE_PORTAL=https://192.0.2.1:9/other\n")
        let other = try subscriber.waitFor("the next portal") { $0.captivePortal != nil }.verdict
        XCTAssertEqual(other.captivePortal?.apiURL, "https://192.0.2.1:9/other", "the unrestricted URN announced none")
        try eventually("the refused query logged") { lab.log.contains("captive portal API: no answer") }
        // An announcement pointing at this host (its own address, loopback) is never contacted.
        try lab.networkdFile("links", of: "eth0", "CAPTIVE_PORTAL=https://192.0.2.2:9/capport\n")
        try subscriber.waitFor("this host's own address announced") { $0.captivePortal?.apiURL == "https://192.0.2.2:9/capport" }
        try eventually("the own address refused") { lab.log.contains("refused: 192.0.2.2 is an address of this host") }
        try lab.networkdFile("links", of: "eth0", "CAPTIVE_PORTAL=https://127.0.0.1:9/capport\n")
        let loopback = try subscriber.waitFor("loopback announced") { $0.captivePortal?.apiURL == "https://127.0.0.1:9/capport" }.verdict
        XCTAssertNil(loopback.captivePortal?.captive, "no answer")
        try eventually("loopback refused") { lab.log.contains("refused: 127.0.0.1 is loopback") }
        XCTAssertTrue(lab.log.contains("captive portal API refused: not contacted"))
    }
}
