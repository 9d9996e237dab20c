import ReachdModel

/// The job as clients see it (docs/transfers.md): unknown values are `null`, the owner is its uid.
extension Job: Codable {
    private enum CodingKeys: String, CodingKey {
        case id, sequence, url, output, state, priority, allowMetered, sha256, uid, bytesReceived, bytesTotal, reason
        case etag, lastModified, attempts, retryAt, created, updated, refreshEvery, lastChecked, nextCheck, allowInsecureAuth
        case kind, method, fields, fileField, responseStatus, responseBody, constraints, proxy, maxRate, pace
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(kind.name, forKey: .kind)
        if let upload {
            try c.encode(upload.form.method, forKey: .method)
            try c.encode(upload.form.fields, forKey: .fields)
            try c.encode(upload.form.fileField, forKey: .fileField)
            try c.encode(upload.answer?.status, forKey: .responseStatus)
            try c.encode(upload.answer?.body, forKey: .responseBody)
        }
        try c.encode(sequence, forKey: .sequence)
        try c.encode(url, forKey: .url)
        try c.encode(file, forKey: .output)
        try c.encode(state, forKey: .state)
        try c.encode(priority, forKey: .priority)
        try c.encode(allowMetered, forKey: .allowMetered)
        try c.encode(allowInsecureAuth, forKey: .allowInsecureAuth)
        // Only when there are any: the jobs without (most) keep their wire form, and events stay small.
        if !constraints.isEmpty { try c.encode(constraints, forKey: .constraints) }
        // The proxy without credentials; only when there is one.
        try c.encodeIfPresent(viaProxy, forKey: .proxy)
        try c.encodeIfPresent(maxRate, forKey: .maxRate)
        if state == .running { try c.encodeIfPresent(pace, forKey: .pace) }
        let download = download
        try c.encode(download?.sha256, forKey: .sha256)
        try c.encode(owner.uid, forKey: .uid)
        try c.encode(bytesMoved, forKey: .bytesReceived)
        try c.encode(bytesTotal, forKey: .bytesTotal)
        try c.encode(reason, forKey: .reason)
        // Those of the file in place once there is one, else of the version being fetched.
        let shown = download.map { $0.installed.etag != nil || $0.installed.lastModified != nil ? $0.installed : $0.partial }
        try c.encode(shown?.etag, forKey: .etag)
        try c.encode(shown?.lastModified, forKey: .lastModified)
        try c.encode(download?.refreshSeconds, forKey: .refreshEvery)
        try c.encode(download?.lastChecked, forKey: .lastChecked)
        try c.encode(download?.nextCheck, forKey: .nextCheck)
        try c.encode(attempts, forKey: .attempts)
        try c.encode(retryAt, forKey: .retryAt)
        try c.encode(created, forKey: .created)
        try c.encode(updated, forKey: .updated)
    }

    /// Refuses a record whose parts contradict its kind (an upload kept fresh, a PUT with form fields, a download
    /// with an upload's answer), naming the offending key.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        sequence = try c.decode(Int64.self, forKey: .sequence)
        url = try c.decode(String.self, forKey: .url)
        state = try c.decode(JobState.self, forKey: .state)
        priority = try c.decode(Priority.self, forKey: .priority)
        allowMetered = try c.decode(Bool.self, forKey: .allowMetered)
        allowInsecureAuth = try c.decodeIfPresent(Bool.self, forKey: .allowInsecureAuth) ?? false
        constraints = try c.decodeIfPresent(JobConstraints.self, forKey: .constraints) ?? JobConstraints()
        viaProxy = try c.decodeIfPresent(String.self, forKey: .proxy)
        maxRate = try c.decodeIfPresent(Int64.self, forKey: .maxRate)
        pace = try c.decodeIfPresent(JobPace.self, forKey: .pace)
        owner = Owner(uid: try c.decode(UInt32.self, forKey: .uid), gid: 0)
        bytesTotal = try c.decodeIfPresent(Int64.self, forKey: .bytesTotal)
        reason = try c.decodeIfPresent(String.self, forKey: .reason)
        attempts = try c.decode(Int.self, forKey: .attempts)
        retryAt = try c.decodeIfPresent(Timestamp.self, forKey: .retryAt)
        created = try c.decode(Timestamp.self, forKey: .created)
        updated = try c.decode(Timestamp.self, forKey: .updated)
        let file = try c.decode(String.self, forKey: .output)
        let moved = try c.decode(Int64.self, forKey: .bytesReceived)
        switch try c.decodeIfPresent(JobKind.self, forKey: .kind) ?? .download {
        case .download:
            for key in [CodingKeys.method, .fields, .fileField, .responseStatus, .responseBody] {
                guard try c.decodeNil(orAbsent: key) else { throw Self.contradiction(key, in: c, "a download has no \(key.stringValue)") }
            }
            let validators = Validators(etag: try c.decodeIfPresent(String.self, forKey: .etag),
                                        lastModified: try c.decodeIfPresent(String.self, forKey: .lastModified))
            let lastChecked = try c.decodeIfPresent(Timestamp.self, forKey: .lastChecked)
            kind = .download(Download(output: file, bytesOnDisk: moved, sha256: try c.decodeIfPresent(String.self, forKey: .sha256),
                                      partial: validators, installed: lastChecked == nil ? Validators() : validators,
                                      lastChecked: lastChecked, refreshSeconds: try c.decodeIfPresent(Int64.self, forKey: .refreshEvery),
                                      nextCheck: try c.decodeIfPresent(Timestamp.self, forKey: .nextCheck)))
        case .upload:
            for key in [CodingKeys.sha256, .etag, .lastModified, .refreshEvery, .lastChecked, .nextCheck] {
                guard try c.decodeNil(orAbsent: key) else { throw Self.contradiction(key, in: c, "an upload has no \(key.stringValue)") }
            }
            let method = try c.decodeIfPresent(UploadMethod.self, forKey: .method) ?? .put
            let fields = try c.decodeIfPresent([FormField].self, forKey: .fields) ?? []
            let fileField = try c.decodeIfPresent(String.self, forKey: .fileField)
            let form: Upload.Form
            do {
                form = try Upload.Form(method: method, fields: fields, fileField: fileField)
            } catch {
                throw Self.contradiction(.method, in: c, error.description)
            }
            let answer = try c.decodeIfPresent(Int.self, forKey: .responseStatus).map {
                Upload.Answer(status: $0, body: try c.decodeIfPresent(String.self, forKey: .responseBody))
            }
            kind = .upload(Upload(source: file, bytesSent: moved, form: form, answer: answer))
        }
    }
}

extension Job {
    private static func contradiction(_ key: CodingKeys, in container: KeyedDecodingContainer<CodingKeys>, _ why: String) -> DecodingError {
        DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: why)
    }
}

extension KeyedDecodingContainer {
    /// Whether `key` is absent or null.
    fileprivate func decodeNil(orAbsent key: Key) throws -> Bool { try !contains(key) || decodeNil(forKey: key) }
}

/// `--refresh-every` durations: `90s`, `15m`, `6h`, `2d`, or plain seconds.
public enum RefreshInterval {
    public static let minimumSeconds: Int64 = 1
    public static let maximumSeconds: Int64 = 365 * 86400

    /// Seconds, or nil when the text is not such a duration (or outside 1 s … 365 d).
    public static func seconds(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var digits = Substring(text), unit: Int64 = 1
        if let last = text.last, let factor = units[last] {
            digits = text.dropLast()
            unit = factor
        }
        guard !digits.isEmpty, digits.count <= 9, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int64(digits) else { return nil }
        let seconds = value * unit
        return (minimumSeconds...maximumSeconds).contains(seconds) ? seconds : nil
    }
}
