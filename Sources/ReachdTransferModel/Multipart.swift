import CReachdFiles

/// A `multipart/form-data` body (RFC 7578) built around a file that is streamed, not held in memory:
/// the text before the file (its fields and the file part's header), the file, and the closing text.
public struct MultipartForm: Hashable, Sendable {
    public var boundary: String
    public var fields: [FormField]
    public var fileField: String
    public var fileName: String
    public var contentType: String

    public init(boundary: String, fields: [FormField], fileField: String, fileName: String,
                contentType: String = "application/octet-stream") {
        self.boundary = boundary
        self.fields = fields
        self.fileField = fileField
        self.fileName = fileName
        self.contentType = contentType
    }

    /// The request's `Content-Type`.
    public var mediaType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The fields' parts and the file part's header, each line ending in CRLF.
    public var head: [UInt8] {
        var text = ""
        for field in fields {
            text += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.escape(field.name))\"\r\n\r\n\(field.value)\r\n"
        }
        text += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.escape(fileField))\"; "
            + "filename=\"\(Self.escape(fileName))\"\r\nContent-Type: \(contentType)\r\n\r\n"
        return Array(text.utf8)
    }

    /// The CRLF after the file and the closing delimiter.
    public var tail: [UInt8] { Array("\r\n--\(boundary)--\r\n".utf8) }

    /// The whole body's length for a file of `fileSize` bytes.
    public func contentLength(fileSize: Int64) -> Int64 { Int64(head.count) + fileSize + Int64(tail.count) }

    /// The delimiter that must not occur in the file or the field values.
    public var delimiter: [UInt8] { Array("--\(boundary)".utf8) }

    /// Whether the fields' values contain the delimiter (the file is checked with `DelimiterScanner`).
    public var fieldsContainDelimiter: Bool {
        let delimiter = self.delimiter
        return fields.contains { field in
            var scanner = DelimiterScanner(delimiter)
            return scanner.feed(Array(field.value.utf8))
        }
    }

    /// Names and file names as HTML's form submission writes them: `"` and line breaks percent-encoded.
    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "%22"
            case "\r": out += "%0D"
            case "\n": out += "%0A"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A boundary from 16 random bytes.
    public static func randomBoundary<G: RandomNumberGenerator>(using generator: inout G) -> String {
        let words = (0..<2).map { _ in UInt64.random(in: .min ... .max, using: &generator) }
        return "reachd-" + words.map { String($0, radix: 36) }.joined(separator: "-")
    }
}

/// A text field of a form upload.
public struct FormField: Hashable, Sendable, Codable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// Finds a byte string in data fed in chunks (matches across chunk borders) with glibc's `memmem`.
public struct DelimiterScanner: Sendable {
    private let pattern: [UInt8]
    /// The last `pattern.count - 1` bytes seen.
    private var carry: [UInt8] = []

    public init(_ pattern: [UInt8]) {
        self.pattern = pattern
    }

    /// Feeds the next chunk; true once the pattern has been seen.
    public mutating func feed(_ chunk: some Collection<UInt8>) -> Bool {
        if let found = chunk.withContiguousStorageIfAvailable({ feed(UnsafeRawBufferPointer($0)) }) { return found }
        return Array(chunk).withUnsafeBytes { feed($0) }
    }

    /// Feeds the next chunk from memory; true once the pattern has been seen.
    public mutating func feed(_ chunk: UnsafeRawBufferPointer) -> Bool {
        let keep = pattern.count - 1
        // Across the border: the carried bytes and the chunk's first ones.
        let junction = carry + chunk.prefix(keep)
        if junction.count >= pattern.count, junction.withUnsafeBytes({ contains($0) }) { return true }
        if contains(chunk) { return true }
        carry = chunk.count >= keep ? Array(chunk.suffix(keep)) : Array((carry + chunk).suffix(keep))
        return false
    }

    /// glibc's memmem: twice as fast as Boyer-Moore-Horspool written here, whose every step waited on the
    /// load of the byte that decides the next one (0.05 against 0.11 s per GiB on this machine).
    private func contains(_ haystack: UnsafeRawBufferPointer) -> Bool {
        guard !pattern.isEmpty, let base = haystack.baseAddress, haystack.count >= pattern.count else { return false }
        return pattern.withUnsafeBytes { reachd_memmem(base, haystack.count, $0.baseAddress!, $0.count) != nil }
    }
}
