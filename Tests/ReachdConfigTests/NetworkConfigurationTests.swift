import ReachdConfig
import ReachdModel
import XCTest

/// `[[network]]` (issue 50): Wi-Fi network rules by SSID or BSSID, checked at start with a clear error.
final class NetworkConfigurationTests: XCTestCase {
    func testNetworkRulesAreReadInOrder() throws {
        let configuration = try Configuration(toml: """
            [[network]]
            ssid = "Phone"
            metered = true
            [[network]]
            ssid_hex = "48ff"
            bssid = "02:1A:11:F0:00:01"
            kind = "wired"
            ignore = true
            [metered]
            wifi_hints = false
            """)
        XCTAssertEqual(configuration.networkRules, [
            NetworkRule(ssid: Array("Phone".utf8), metered: true),
            NetworkRule(ssid: [0x48, 0xFF], bssid: [0x02, 0x1A, 0x11, 0xF0, 0x00, 0x01], kind: .wired, ignore: true),
        ])
        XCTAssertEqual(configuration.classifier.networkRules, configuration.networkRules)
        XCTAssertFalse(configuration.meteredSources.contains(.wifiHints))
        XCTAssertTrue(try Configuration(toml: "").meteredSources.contains(.wifiHints), "on by default")
    }

    func testBadNetworkRulesAreClearErrors() {
        let cases: [(String, String)] = [
            ("network = 1", #""network" must be an array of tables: write [[network]]"#),
            ("[[network]]\nmetered = true", #"network #1: give "ssid" (or "ssid_hex"), "bssid" or both"#),
            ("[[network]]\nssid = \"\"", #"network #1: "ssid" must be a network name of 1 to 32 bytes"#),
            ("[[network]]\nssid = \"\(String(repeating: "x", count: 33))\"", #"network #1: "ssid" must be a network name of 1 to 32 bytes"#),
            ("[[network]]\nssid_hex = \"4\"", #"network #1: "ssid_hex" must be 1 to 32 bytes in hex, such as "486f6d65""#),
            ("[[network]]\nssid = \"a\"\nssid_hex = \"61\"", #"network #1: give "ssid" or "ssid_hex", not both"#),
            ("[[network]]\nbssid = \"02:1a:11\"", #"network #1: "bssid" must be an access point's address, such as "02:1a:11:f0:00:01""#),
            ("[[network]]\nssid = \"Home\"\nmetered = \"yes\"", #"network #1 (ssid "Home"): "metered" must be true or false"#),
            ("[[network]]\nssid = \"Home\"\nkind = \"fast\"", #"network #1 (ssid "Home"): "kind" must be one of wifi, wwan, wired, other"#),
            ("[[network]]\nssid = \"Home\"\nmatch = \"wlan0\"", #"network #1: unknown key "match" (known: bssid, ignore, kind, metered, ssid, ssid_hex)"#),
            ("[metered]\nwifi_hints = 1", #"metered: "wifi_hints" must be true or false"#),
            (String(repeating: "[[network]]\nssid = \"a\"\n", count: 1025), "network: at most 1024 [[network]] tables"),
        ]
        for (text, message) in cases {
            XCTAssertThrowsError(try Configuration(toml: text), text) { error in
                XCTAssertEqual((error as? ConfigurationError)?.message, message, text)
            }
        }
    }
}
