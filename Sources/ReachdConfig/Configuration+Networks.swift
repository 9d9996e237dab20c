import ReachdModel

extension Configuration {
    /// `[[network]]` tables read; each snapshot's Wi-Fi links are matched against them in turn.
    static let maximumNetworkRules = 1024
    private static let networkKeys: Set<String> = ["ssid", "ssid_hex", "bssid", "kind", "metered", "ignore"]

    /// `[[network]]`: rules for Wi-Fi networks, by SSID (`ssid`, or `ssid_hex` for one that is not UTF-8), BSSID or
    /// both; each says `metered`, `kind` or `ignore`.
    mutating func readNetworks(_ value: TOMLValue?) throws {
        guard let value else { return }
        guard let array = value.array, array.allSatisfy({ $0.table != nil }) else {
            throw ConfigurationError("\"network\" must be an array of tables: write [[network]]")
        }
        guard array.count <= Self.maximumNetworkRules else {
            throw ConfigurationError("network: at most \(Self.maximumNetworkRules) [[network]] tables")
        }
        for (position, element) in array.enumerated() {
            networkRules.append(try Self.networkRule(from: element.table!, place: "network #\(position + 1)"))
        }
    }

    private static func networkRule(from entry: TOMLTable, place: String) throws -> NetworkRule {
        for key in entry.keys where !networkKeys.contains(key) {
            throw ConfigurationError("\(place): unknown key \"\(key)\" (known: \(networkKeys.sorted().joined(separator: ", ")))")
        }
        var rule = NetworkRule()
        let longest = WifiIdentity.maximumSSIDLength
        switch (entry["ssid"], entry["ssid_hex"]) {
        case (.some, .some):
            throw ConfigurationError("\(place): give \"ssid\" or \"ssid_hex\", not both")
        case (let text?, nil):
            guard let ssid = text.string.map({ Array($0.utf8) }), (1...longest).contains(ssid.count) else {
                throw ConfigurationError("\(place): \"ssid\" must be a network name of 1 to \(longest) bytes")
            }
            rule.ssid = ssid
        case (nil, let hex?):
            guard let ssid = hex.string.flatMap(WifiIdentity.bytes(hex:)), (1...longest).contains(ssid.count) else {
                throw ConfigurationError("\(place): \"ssid_hex\" must be 1 to \(longest) bytes in hex, such as \"486f6d65\"")
            }
            rule.ssid = ssid
        case (nil, nil):
            break
        }
        if let value = entry["bssid"] {
            guard let bssid = value.string.flatMap(WifiIdentity.bssid) else {
                throw ConfigurationError("\(place): \"bssid\" must be an access point's address, such as \"02:1a:11:f0:00:01\"")
            }
            rule.bssid = bssid
        }
        guard rule.ssid != nil || rule.bssid != nil else {
            throw ConfigurationError("\(place): give \"ssid\" (or \"ssid_hex\"), \"bssid\" or both")
        }
        let named = "\(place) (\(rule.label))"
        if let value = entry["kind"] {
            guard let name = value.string, let kind = InterfaceKind(rawValue: name) else {
                throw ConfigurationError("\(named): \"kind\" must be one of \(InterfaceKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            rule.kind = kind
        }
        if let value = entry["metered"] {
            guard let metered = value.bool else { throw ConfigurationError("\(named): \"metered\" must be true or false") }
            rule.metered = metered
        }
        if let value = entry["ignore"] {
            guard let ignore = value.bool else { throw ConfigurationError("\(named): \"ignore\" must be true or false") }
            rule.ignore = ignore
        }
        return rule
    }
}
