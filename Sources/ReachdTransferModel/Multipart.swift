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

    /// A boundary from 16 random bytes, drawn anew for each attempt. Neither the file nor the fields are
    /// searched for it: content written before the draw holds a given 128-bit string by chance with odds of
    /// about 2^-98 per GiB, and a scan could not stop a change made while the body is sent (curl, browsers, Go's
    /// `mime/multipart` and Python's `requests` scan nothing either).
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
