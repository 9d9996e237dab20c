import ReachdModel
import XCTest

/// networkd's DHCPv4 lease file (option 43) and link state file (the captive-portal URI), read tolerantly.
final class NetworkdLeaseTests: XCTestCase {
    /// A lease as networkd 252 writes it (T1, T2 and LIFETIME in plain seconds).
    static let lease252 = """
        # This is private data. Do not parse.
        ADDRESS=203.0.113.12
        NETMASK=255.255.255.0
        ROUTER=203.0.113.1
        SERVER_ADDRESS=203.0.113.1
        T1=60
        T2=105
        LIFETIME=120
        DNS=203.0.113.1 198.51.100.53
        DOMAINNAME=example.test
        CLIENTID=ff3a1b2c4d00020000ab11c0ffee2e0a7b4a91
        VENDOR_SPECIFIC=414e44524f49445f4d455445524544

        """
    static let marker: [UInt8] = Array("ANDROID_METERED".utf8)

    private func parse(_ text: String) -> Result<NetworkdLease, NetworkdLeaseProblem> {
        NetworkdLease.parse(Array(text.utf8))
    }

    func testNetworkd252LeaseWithVendorSpecific() throws {
        let lease = try parse(Self.lease252).get()
        XCTAssertEqual(lease.vendorSpecific, Self.marker)
        XCTAssertTrue(lease.androidMetered)
    }

    func testNetworkd252LeaseWithoutVendorSpecificIsNoProblem() throws {
        let text = Self.lease252.split(separator: "\n").filter { !$0.hasPrefix("VENDOR_SPECIFIC") }.joined(separator: "\n")
        let lease = try parse(text).get()
        XCTAssertNil(lease.vendorSpecific)
        XCTAssertFalse(lease.androidMetered)
    }

    func testNetworkd257LeaseWithTimespans() throws {
        let text = """
            # This is private data. Do not parse.
            ADDRESS=192.168.42.17
            NETMASK=255.255.255.0
            ROUTER=192.168.42.129
            SERVER_ADDRESS=192.168.42.129
            BROADCAST=192.168.42.255
            T1=1min
            T2=1min 45s
            LIFETIME=2min
            DNS=192.168.42.129
            CLIENTID=ff3a1b2c4d
            VENDOR_SPECIFIC=2b0f414e44524f49445f4d455445524544ff

            """
        let lease = try parse(text).get()
        XCTAssertEqual(lease.vendorSpecific, [0x2b, 0x0f] + Self.marker + [0xff])
        XCTAssertTrue(lease.androidMetered, "ANDROID_METERED among other vendor bytes")
    }

    func testJSONLease() throws {
        let json = """
              {"Address":"203.0.113.12","T1":60000000,"Servers":{"DNS":["203.0.113.1"]},
               "Vendor_Specific":"414E44524F49445F4D455445524544","Private_Options":[{"Option":224,"Data":"00"}]}
            """
        XCTAssertEqual(try parse(json).get(), NetworkdLease(vendorSpecific: Self.marker), "uppercase hex accepted")
        XCTAssertEqual(try parse(#"{"Address":"203.0.113.12"}"#).get(), NetworkdLease())
        XCTAssertEqual(try parse(#"{"Vendor_Specific":null}"#).get(), NetworkdLease())
        XCTAssertEqual(parse(#"{"Vendor_Specific":[65]}"#), .failure(.badVendorSpecific("Vendor_Specific is not a string")))
        XCTAssertEqual(parse(#"{"Vendor_Specific":"4"}"#), .failure(.badVendorSpecific("an odd number of hex digits")))
        guard case .failure(.unreadable) = parse(#"{"Vendor_Specific":"41""#) else { return XCTFail("broken JSON is unreadable") }
        guard case .failure(.unreadable) = parse("{}x") else { return XCTFail("text after the object") }
    }

    func testAndroidMeteredIsACaseSensitiveSubstring() {
        XCTAssertTrue(NetworkdLease(vendorSpecific: Self.marker).androidMetered)
        XCTAssertTrue(NetworkdLease(vendorSpecific: Array("xxANDROID_METEREDyy".utf8)).androidMetered)
        XCTAssertFalse(NetworkdLease(vendorSpecific: Array("android_metered".utf8)).androidMetered)
        XCTAssertFalse(NetworkdLease(vendorSpecific: Array("ANDROID_METERE".utf8)).androidMetered)
        XCTAssertFalse(NetworkdLease(vendorSpecific: []).androidMetered)
        XCTAssertFalse(NetworkdLease().androidMetered)
    }

    func testBadHex() {
        for (value, why) in [
            ("414e44524f49445f4d45544552454", "an odd number of hex digits"), // truncated mid-hex
            ("414g", "a byte that is not a hex digit"),
            ("41 4", "a byte that is not a hex digit"),
            ("41\u{0}4", "a byte that is not a hex digit"),
            (String(repeating: "41", count: 1025), "over 2048 hex digits"),
        ] {
            XCTAssertEqual(parse("VENDOR_SPECIFIC=\(value)\n"), .failure(.badVendorSpecific(why)), value)
        }
        XCTAssertEqual(try parse("VENDOR_SPECIFIC=\(String(repeating: "41", count: 1024))").get().vendorSpecific?.count, 1024)
    }

    func testOversizedFile() {
        let bytes = Array(Self.lease252.utf8) + [UInt8](repeating: 0x23, count: NetworkdLease.maximumSize)
        XCTAssertEqual(NetworkdLease.parse(bytes), .failure(.oversized(bytes.count)))
        let padded = Array(Self.lease252.utf8) + [UInt8](repeating: 0x0a, count: NetworkdLease.maximumSize - Self.lease252.utf8.count)
        XCTAssertEqual(try NetworkdLease.parse(padded).get().vendorSpecific, Self.marker, "exactly the maximum is read")
    }

    func testHostileAndOddFiles() throws {
        XCTAssertEqual(try parse("").get(), NetworkdLease(), "empty file")
        XCTAssertEqual(try parse("# This is private data. Do not parse.\n").get(), NetworkdLease(), "header only")
        XCTAssertEqual(try parse("# This is private data. Do not parse.\r\nVENDOR_SPECIFIC=4142\r\n").get().vendorSpecific, [0x41, 0x42], "CRLF")
        XCTAssertEqual(try parse("VENDOR_SPECIFIC\nVENDOR_SPECIFIC=4142").get().vendorSpecific, [0x41, 0x42], "a key without '='")
        XCTAssertEqual(try parse("VENDOR_SPECIFIC=4142\nVENDOR_SPECIFIC=4344\n").get().vendorSpecific, [0x43, 0x44], "last wins")
        XCTAssertEqual(try parse("VENDOR_SPECIFIC=\"4142\"").get().vendorSpecific, [0x41, 0x42], "double quotes")
        XCTAssertEqual(try parse("  VENDOR_SPECIFIC = 4142 \t").get().vendorSpecific, [0x41, 0x42], "spaces around")
        XCTAssertEqual(try parse("#VENDOR_SPECIFIC=4142\n;VENDOR_SPECIFIC=4344").get(), NetworkdLease(), "comments")
        XCTAssertEqual(try parse("VENDOR_SPECIFIC=").get(), NetworkdLease(), "empty value")
        XCTAssertEqual(try parse("X_VENDOR_SPECIFIC=4142\nVENDOR_SPECIFIC_X=4142").get(), NetworkdLease(), "other keys")
        XCTAssertEqual(try parse("ADDRESS=1.2.3.4\0\nVENDOR_SPECIFIC=4142\n\0").get().vendorSpecific, [0x41, 0x42], "NUL bytes")
        let huge = "HOSTNAME=" + String(repeating: "h", count: 60_000) + "\nVENDOR_SPECIFIC=4142"
        XCTAssertEqual(try parse(huge).get().vendorSpecific, [0x41, 0x42], "a huge line")
        XCTAssertEqual(NetworkdLease.parse(Array("VENDOR_SPECIFIC=4142\nHOSTNAME=".utf8) + [0xff]), .failure(.unreadable("invalid UTF-8")))
    }

    func testLinkStateCaptivePortal() {
        let links = """
            # This is private data. Do not parse.
            ADMIN_STATE=configured
            OPER_STATE=routable
            CAPTIVE_PORTAL=https://portal.example.test/capport?x=1
            DHCP_LEASE=/run/systemd/netif/leases/3

            """
        XCTAssertEqual(NetworkdLinkState.captivePortal(in: Array(links.utf8)), "https://portal.example.test/capport?x=1")
        XCTAssertEqual(NetworkdLinkState.captivePortal(in: Array("CAPTIVE_PORTAL=http://a\r\n".utf8)), "http://a", "unjudged, CRLF")
        XCTAssertNil(NetworkdLinkState.captivePortal(in: Array("ADMIN_STATE=configured\n".utf8)), "absent")
        XCTAssertNil(NetworkdLinkState.captivePortal(in: Array("CAPTIVE_PORTAL=\n".utf8)), "empty")
        XCTAssertNil(NetworkdLinkState.captivePortal(in: Array("CAPTIVE_PORTAL=https://a b\n".utf8)), "a space")
        XCTAssertNil(NetworkdLinkState.captivePortal(in: Array("CAPTIVE_PORTAL=https://a\u{7f}\n".utf8)), "DEL")
        XCTAssertNil(NetworkdLinkState.captivePortal(in: Array("CAPTIVE_PORTAL=https://ä\n".utf8)), "non-ASCII")
        let long = "https://a/" + String(repeating: "b", count: 2038)
        XCTAssertEqual(NetworkdLinkState.captivePortal(in: Array("CAPTIVE_PORTAL=\(long)".utf8)), long, "2048 bytes")
        XCTAssertNil(NetworkdLinkState.captivePortal(in: Array("CAPTIVE_PORTAL=\(long)b".utf8)), "2049 bytes")
    }

    func testProblemsDescribeThemselves() {
        XCTAssertEqual(NetworkdLeaseProblem.oversized(70000).description, "lease file too large (70000 bytes, at most 65536)")
        XCTAssertEqual(NetworkdLeaseProblem.badVendorSpecific("odd").description, "bad vendor-specific option (odd)")
        XCTAssertEqual(NetworkdLeaseProblem.unreadable("invalid UTF-8").description, "lease file unreadable (invalid UTF-8)")
    }
}
