#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encodes a value as one protocol line: compact JSON with sorted keys, then `\n`.
package func encodeJSONLine<Value: Encodable>(_ value: Value) -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    // The protocol's values are plain structs and enums: encoding them cannot fail.
    var bytes = [UInt8]((try? encoder.encode(value)) ?? Data("null".utf8))
    bytes.append(UInt8(ascii: "\n"))
    return bytes
}
