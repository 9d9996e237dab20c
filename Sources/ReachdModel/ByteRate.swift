/// A transfer rate cap in bytes per second, as wget's `--limit-rate` and curl's `--limit-rate` write it: a number
/// of bytes with an optional `k`, `m` or `g` (binary multiples: `500k` is 512,000 bytes/s; `1.5m` works), from
/// 1 KiB/s to 1 TiB/s.
public enum ByteRate {
    public static let minimum: Int64 = 1024
    public static let maximum: Int64 = 1 << 40

    /// The bytes per second `text` names; nil when it is not a rate in range.
    public static func bytesPerSecond(_ text: String) -> Int64? {
        guard let last = text.last, !text.isEmpty, text.utf8.count <= 32 else { return nil }
        let multiplier: Double
        var number = Substring(text)
        switch last {
        case "k", "K": multiplier = 1024
        case "m", "M": multiplier = 1024 * 1024
        case "g", "G": multiplier = 1024 * 1024 * 1024
        default: multiplier = 1
        }
        if multiplier != 1 { number = number.dropLast() }
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              let value = Double(number), value.isFinite else { return nil }
        let bytes = (value * multiplier).rounded()
        guard bytes >= Double(minimum), bytes <= Double(maximum) else { return nil }
        return Int64(bytes)
    }

    /// `bytes` per second as people read it: `500 KiB/s`, `2.0 MiB/s`.
    public static func describe(_ bytes: Int64) -> String {
        let units: [(Int64, String)] = [(1 << 30, "GiB/s"), (1 << 20, "MiB/s"), (1 << 10, "KiB/s")]
        for (size, unit) in units where bytes >= size {
            let value = Double(bytes) / Double(size)
            let rounded = (value * 10).rounded() / 10
            return rounded == rounded.rounded() ? "\(Int64(rounded)) \(unit)" : "\(rounded) \(unit)"
        }
        return "\(bytes) B/s"
    }
}
