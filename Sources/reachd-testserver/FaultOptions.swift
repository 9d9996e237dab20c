import Foundation
import NIOCore

/// The faults a request asks for through its query parameters.
struct FaultOptions {
    var rate: Int64?
    var dropAfter: Int64?
    var dropTimes = 1
    var status: Int?
    var statusTimes = 1
    /// The status is answered only after this many requests were served normally.
    var statusAfter = 0
    var retryAfter: String?
    var ignoreRange = false
    /// Serve a Range whatever If-Range says (a server that splices versions unless the client checks).
    var ignoreIfRange = false
    /// A `Content-Encoding` header on the (unencoded) body.
    var contentEncoding: String?
    var noValidators = false
    var noLength = false
    var redirect: Int?
    var cacheControl: String?
    var vary: String?
    /// Extra response fields, `header=Name:Value` (repeatable), on file answers and on injected statuses.
    var extraHeaders: [(String, String)] = []
    var age: String?
    /// The body one byte per this many milliseconds (a server that trickles).
    var trickleMilliseconds: Int64?

    init(query: String) {
        for (key, value) in Self.parameters(query) {
            switch key {
            case "rate": rate = Int64(value).map { max(1, $0) }
            case "drop-after": dropAfter = Int64(value)
            case "drop-times": dropTimes = Int(value) ?? dropTimes
            case "status": status = Int(value)
            case "status-times": statusTimes = Int(value) ?? statusTimes
            case "status-after": statusAfter = Int(value) ?? statusAfter
            case "retry-after": retryAfter = value
            case "ignore-range": ignoreRange = value == "1"
            case "ignore-if-range": ignoreIfRange = value == "1"
            case "content-encoding": contentEncoding = value
            case "no-validators": noValidators = value == "1"
            case "no-length": noLength = value == "1"
            case "redirect": redirect = Int(value)
            case "cache-control": cacheControl = value
            case "vary": vary = value
            case "age": age = value
            case "trickle": trickleMilliseconds = Int64(value).map { max(1, $0) }
            case "header":
                if let colon = value.firstIndex(of: ":") {
                    extraHeaders.append((String(value[..<colon]), String(value[value.index(after: colon)...])))
                }
            default: break
            }
        }
    }

    /// The query of the next hop of a redirect chain: `redirect` decremented, or removed at 0.
    static func nextRedirectQuery(_ query: String, remaining: Int) -> String {
        query.split(separator: "&").compactMap { item -> String? in
            guard item.split(separator: "=", maxSplits: 1).first == "redirect" else { return String(item) }
            return remaining > 0 ? "redirect=\(remaining)" : nil
        }.joined(separator: "&")
    }

    private static func parameters(_ query: String) -> [(String, String)] {
        query.split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.removingPercentEncoding ?? String($0) }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }
}

/// The outcome of a `Range` header against a file of `size` bytes.
enum ByteRange: Equatable {
    case partial(first: Int64, last: Int64)
    case unsatisfiable

    /// Parses `bytes=N-`, `bytes=N-M` or `bytes=-N`; nil for anything else (the header is then ignored).
    init?(header: String, size: Int64) {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        let first = Int64(spec[0].trimmingCharacters(in: .whitespaces))
        let last = Int64(spec[1].trimmingCharacters(in: .whitespaces))
        switch (first, last) {
        case (let first?, nil) where spec[1].isEmpty:
            self = first < size ? .partial(first: first, last: size - 1) : .unsatisfiable
        case (let first?, let last?) where first <= last:
            self = first < size ? .partial(first: first, last: min(last, size - 1)) : .unsatisfiable
        case (nil, let suffix?) where spec[0].isEmpty:
            self = suffix > 0 && size > 0 ? .partial(first: max(0, size - suffix), last: size - 1) : .unsatisfiable
        default:
            return nil
        }
    }
}

/// The validators of an open regular file, taken when the request is served.
struct FileInfo {
    let size: Int64
    let mtime: Int
    let etag: String
    let lastModified: String

    /// Nil when the handle is not a regular file.
    init?(_ file: NIOFileHandle) {
        var st = stat()
        guard (try? file.withUnsafeFileDescriptor({ fstat($0, &st) })) == 0, st.st_mode & S_IFMT == S_IFREG else {
            return nil
        }
        size = Int64(st.st_size)
        mtime = Int(st.st_mtim.tv_sec)
        let nanoseconds = UInt64(st.st_mtim.tv_sec) &* 1_000_000_000 &+ UInt64(st.st_mtim.tv_nsec)
        etag = "\"" + [UInt64(st.st_ino), UInt64(size), nanoseconds].map(Self.hex16).joined() + "\""
        lastModified = HTTPDate.format(mtime)
    }

    private static func hex16(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// RFC 7231 IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func format(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let date = "\(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900)"
        let clock = "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
        return "\(days[Int(parts.tm_wday)]), \(date) \(clock) GMT"
    }

    /// Seconds since the epoch, or nil when `text` is not an IMF-fixdate.
    static func parse(_ text: String) -> Int? {
        let words = text.split(separator: " ")
        let clock = words.count == 6 ? words[4].split(separator: ":").compactMap { Int32($0) } : []
        guard clock.count == 3, words[5] == "GMT", days.contains(String(words[0].dropLast())),
            let day = Int32(words[1]), let month = months.firstIndex(of: String(words[2])), let year = Int32(words[3])
        else { return nil }
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday) = (year - 1900, Int32(month), day)
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (clock[0], clock[1], clock[2])
        return Int(timegm(&parts))
    }
}
