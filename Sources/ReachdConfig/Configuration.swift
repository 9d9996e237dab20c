import ReachdModel

/// reachd's configuration file (TOML); `docs/configuration.md` and `reachd.toml.example` describe it.
public struct Configuration: Hashable, Sendable {
    /// Interface rules, first match wins.
    public var interfaceRules: [InterfaceRule]

    public init(interfaceRules: [InterfaceRule] = []) {
        self.interfaceRules = interfaceRules
    }

    /// The classifier these rules configure.
    public var classifier: InterfaceClassifier { InterfaceClassifier(rules: interfaceRules) }
}

/// A configuration file that cannot be used, with the place and the reason.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension Configuration {
    private static let topLevelKeys: Set<String> = ["interface"]
    private static let interfaceKeys: Set<String> = ["match", "kind", "metered", "ignore"]

    /// Parses TOML text; throws `ConfigurationError` naming the bad key or line.
    public init(toml text: String) throws {
        let table: TOMLTable
        do {
            table = try TOMLParser.parse(text)
        } catch let error as TOMLError {
            throw ConfigurationError("invalid TOML at \(error)")
        }
        for key in table.keys where !Self.topLevelKeys.contains(key) {
            throw ConfigurationError("unknown key \"\(key)\" (known: \(Self.topLevelKeys.sorted().joined(separator: ", ")))")
        }
        var rules: [InterfaceRule] = []
        if let value = table["interface"] {
            guard let array = value.array, array.allSatisfy({ $0.table != nil }) else {
                throw ConfigurationError("\"interface\" must be an array of tables: write [[interface]]")
            }
            for (position, element) in array.enumerated() {
                guard let entry = element.table else {
                    throw ConfigurationError("interface #\(position + 1) must be a table")
                }
                rules.append(try Self.rule(from: entry, position: position + 1))
            }
        }
        self.init(interfaceRules: rules)
    }

    private static func rule(from entry: TOMLTable, position: Int) throws -> InterfaceRule {
        let place = "interface #\(position)"
        for key in entry.keys where !interfaceKeys.contains(key) {
            throw ConfigurationError("\(place): unknown key \"\(key)\" (known: \(interfaceKeys.sorted().joined(separator: ", ")))")
        }
        guard let match = entry["match"]?.string, !match.isEmpty else {
            throw ConfigurationError("\(place): \"match\" (an interface name or glob) is required")
        }
        var rule = InterfaceRule(match: match)
        if let value = entry["kind"] {
            guard let name = value.string, let kind = InterfaceKind(rawValue: name) else {
                let kinds = InterfaceKind.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationError("\(place) (\(match)): \"kind\" must be one of \(kinds)")
            }
            rule.kind = kind
        }
        if let value = entry["metered"] {
            guard let metered = value.bool else {
                throw ConfigurationError("\(place) (\(match)): \"metered\" must be true or false")
            }
            rule.metered = metered
        }
        if let value = entry["ignore"] {
            guard let ignore = value.bool else {
                throw ConfigurationError("\(place) (\(match)): \"ignore\" must be true or false")
            }
            rule.ignore = ignore
        }
        return rule
    }
}

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Configuration {
    /// Reads and parses a configuration file; errors name the file.
    public static func load(path: String) throws -> Configuration {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigurationError("\(path): cannot read the file")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError("\(path): not UTF-8 text")
        }
        do {
            return try Configuration(toml: text)
        } catch let error as ConfigurationError {
            throw ConfigurationError("\(path): \(error.message)")
        }
    }
}
