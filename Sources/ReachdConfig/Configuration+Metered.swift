import ReachdModel

extension Configuration {
    /// Whether networkd's state files are of use: for the DHCP lease or for the announced captive portal.
    public var readsNetworkd: Bool { meteredSources.contains(.dhcp) || captivePortalAPI }

    /// `[metered] dhcp`, `tethering` and `wifi_hints`: whether networkd's DHCP lease (`ANDROID_METERED`), tethering
    /// devices (`ipheth`, `rndis_host`, Bluetooth PAN) and a Wi-Fi beacon's cost elements may say a link is metered;
    /// all on by default.
    mutating func readMetered(_ value: TOMLValue?) throws {
        guard let value else { return }
        guard let section = value.table else { throw ConfigurationError("\"metered\" must be a table: write [metered]") }
        for key in section.keys where !["dhcp", "tethering", "wifi_hints"].contains(key) {
            throw ConfigurationError("metered: unknown key \"\(key)\" (known: dhcp, tethering, wifi_hints)")
        }
        for (key, source) in [("dhcp", MeteredSources.dhcp), ("tethering", .tethering), ("wifi_hints", .wifiHints)] {
            guard let entry = section[key] else { continue }
            guard let on = entry.bool else { throw ConfigurationError("metered: \"\(key)\" must be true or false") }
            if on { meteredSources.insert(source) } else { meteredSources.remove(source) }
        }
    }

    /// `[captive_portal] api`: whether reachd asks the captive-portal API a network announces (RFC 8908/8910); on by default.
    mutating func readCaptivePortal(_ value: TOMLValue?) throws {
        guard let value else { return }
        guard let section = value.table else { throw ConfigurationError("\"captive_portal\" must be a table: write [captive_portal]") }
        for key in section.keys where key != "api" {
            throw ConfigurationError("captive_portal: unknown key \"\(key)\" (known: api)")
        }
        if let entry = section["api"] {
            guard let on = entry.bool else { throw ConfigurationError("captive_portal: \"api\" must be true or false") }
            captivePortalAPI = on
        }
    }
}
