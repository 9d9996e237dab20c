import ReachdModel

/// Where a transfer job is in its life. Terminal states are `completed`, `failed` and `cancelled`.
public enum JobState: String, Hashable, Sendable, Codable, CaseIterable {
    /// Allowed to run, waiting for a free slot.
    case queued
    /// Held back by the network (metered or unreachable route) or waiting for a retry; `reason` says which.
    case deferred
    case running
    /// Paused by its owner; only `resume` moves it on.
    case paused
    case completed
    case failed
    case cancelled

    public var isTerminal: Bool { self == .completed || self == .failed || self == .cancelled }
}

/// Scheduling priority: higher runs first, FIFO within one priority.
public enum Priority: String, Hashable, Sendable, Codable, CaseIterable, Comparable {
    case low, normal, high

    private var rank: Int {
        switch self {
        case .low: 0
        case .normal: 1
        case .high: 2
        }
    }

    public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rank < rhs.rank }
}

/// What a job moves.
public enum JobKind: String, Hashable, Sendable, Codable {
    case download, upload
}

/// How an upload sends its file: PUT (the file is the body) or POST (`multipart/form-data`).
public enum UploadMethod: String, Hashable, Sendable, Codable {
    case put = "PUT"
    case post = "POST"
}

/// What a client asks for when it adds an upload.
public struct UploadSpec: Hashable, Sendable {
    /// Absolute path of the file to send.
    public var file: String
    public var url: String
    public var method: UploadMethod
    /// POST: the text fields sent before the file.
    public var fields: [FormField]
    /// POST: the file part's name.
    public var fileField: String
    public var allowMetered: Bool
    public var priority: Priority
    public var allowInsecureAuth: Bool
    public var constraints = JobConstraints()

    public init(file: String, url: String, method: UploadMethod = .put, fields: [FormField] = [], fileField: String = "file",
                allowMetered: Bool = false, priority: Priority = .normal, allowInsecureAuth: Bool = false) {
        self.file = file
        self.url = url
        self.method = method
        self.fields = fields
        self.fileField = fileField
        self.allowMetered = allowMetered
        self.priority = priority
        self.allowInsecureAuth = allowInsecureAuth
    }
}

/// The local user a job belongs to: files are created with these credentials.
public struct Owner: Hashable, Sendable, Codable {
    public var uid: UInt32
    public var gid: UInt32
    /// Supplementary groups.
    public var groups: [UInt32]

    public init(uid: UInt32, gid: UInt32, groups: [UInt32] = []) {
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    /// Root sees and controls every job; everyone else only their own.
    public func mayControl(_ job: Job) -> Bool { uid == 0 || uid == job.owner.uid }
}

/// What a client asks for when it adds a download.
public struct DownloadSpec: Hashable, Sendable, Codable {
    public var url: String
    /// Absolute path of the finished file.
    public var output: String
    public var allowMetered: Bool
    public var priority: Priority
    /// Expected SHA-256 of the whole file, lowercase hex.
    public var sha256: String?
    /// Keep the file fresh: check the server this often (seconds) with a conditional request.
    public var refreshSeconds: Int64?
    /// Send netrc credentials over plain http too (otherwise such a job fails rather than expose them).
    public var allowInsecureAuth: Bool
    /// When the job may run, beside its route (none: the metered rule).
    public var constraints = JobConstraints()

    public init(url: String, output: String, allowMetered: Bool = false, priority: Priority = .normal, sha256: String? = nil,
                refreshSeconds: Int64? = nil, allowInsecureAuth: Bool = false) {
        self.allowInsecureAuth = allowInsecureAuth
        self.url = url
        self.output = output
        self.allowMetered = allowMetered
        self.priority = priority
        self.sha256 = sha256
        self.refreshSeconds = refreshSeconds
    }
}

/// Validators of the version of the file a partial download holds (RFC 9110 §8.8).
public struct Validators: Hashable, Sendable, Codable {
    public var etag: String?
    public var lastModified: String?
    /// Last-Modified was at least one second older than the `Date` of the response that carried it, so it
    /// names one version (RFC 9110 §8.8.2.2) and may guard a range request.
    public var lastModifiedIsStrong: Bool

    public init(etag: String? = nil, lastModified: String? = nil, lastModifiedIsStrong: Bool = false) {
        self.etag = etag
        self.lastModified = lastModified
        self.lastModifiedIsStrong = lastModifiedIsStrong
    }

    /// From a response's `ETag`, `Last-Modified` and `Date`.
    public init(etag: String?, lastModified: String?, date: String?) {
        let modified = lastModified.flatMap { HTTPDate.unixSeconds($0.trimmingSpaces) }
        let sent = date.flatMap { HTTPDate.unixSeconds($0.trimmingSpaces) }
        self.init(etag: etag, lastModified: lastModified,
                  lastModifiedIsStrong: modified.flatMap { modified in sent.map { modified.saturatingAdd(1) <= $0 } } ?? false)
    }

    /// A strong entity tag (`"…"`, not `W/"…"`, RFC 9110 §8.8.3) can guard a range request.
    public var strongETag: String? {
        guard let etag else { return nil }
        let bytes = Array(etag.utf8)
        guard bytes.count >= 2, bytes.first == 0x22, bytes.last == 0x22,
              bytes.dropFirst().dropLast().allSatisfy({ $0 == 0x21 || ($0 >= 0x23 && $0 != 0x7F) }) else { return nil }
        return etag
    }

    /// The `If-Range` value: the strong ETag, else a strong Last-Modified, else nil (no safe resume).
    public var ifRange: String? { strongETag ?? (lastModifiedIsStrong ? lastModified : nil) }

    /// Whether a 206 that carries these validators continues the version `partial` names: the same strong
    /// ETag, or (when the partial has none) the same strong Last-Modified. Anything else could splice two versions.
    public func continues(_ partial: Validators) -> Bool {
        if let held = partial.strongETag { return strongETag == held }
        guard partial.lastModifiedIsStrong, let held = partial.lastModified else { return false }
        return lastModified == held
    }

    private enum CodingKeys: String, CodingKey { case etag, lastModified, lastModifiedIsStrong }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(etag: try container.decodeIfPresent(String.self, forKey: .etag),
                  lastModified: try container.decodeIfPresent(String.self, forKey: .lastModified),
                  lastModifiedIsStrong: try container.decodeIfPresent(Bool.self, forKey: .lastModifiedIsStrong) ?? false)
    }
}

/// A download job as stored, scheduled and shown to clients.
public struct Job: Hashable, Sendable {
    public var id: String
    public var kind: JobKind
    /// Insertion order: FIFO within a priority.
    public var sequence: Int64
    public var url: String
    /// The local file: where a download goes, what an upload sends.
    public var output: String
    public var state: JobState
    public var priority: Priority
    public var allowMetered: Bool
    /// Send netrc credentials over plain http too.
    public var allowInsecureAuth: Bool
    /// When the job may run, beside its route.
    public var constraints: JobConstraints
    public var sha256: String?
    public var owner: Owner
    /// Bytes moved: of a download on disk (partial while running), of an upload sent in the current attempt.
    public var bytesReceived: Int64
    /// Size of the whole file, nil while unknown.
    public var bytesTotal: Int64?
    /// Why the job is deferred, paused or failed, naming what would unblock it.
    public var reason: String?
    /// Validators of the version the partial file holds.
    public var validators: Validators
    /// Validators of the file in place at the output (set when a download completes): refresh checks send them.
    public var current: Validators
    /// Check the server for a newer file this often (seconds); nil for a one-off download.
    public var refreshSeconds: Int64?
    /// When the file in place was last confirmed or replaced (a completed download counts); nil before.
    public var lastChecked: Timestamp?
    /// When the next refresh check is due; nil when none is planned.
    public var nextCheck: Timestamp?
    /// Uploads: how the file is sent, and the form around it (POST).
    public var method: UploadMethod?
    public var fields: [FormField]
    public var fileField: String?
    /// Uploads: the server's status and the start of its answer (at most 1 KiB).
    public var responseStatus: Int?
    public var responseBody: String?
    /// Failed attempts since the last progress (drives the backoff).
    public var attempts: Int
    /// When a deferred retry may run again.
    public var retryAt: Timestamp?
    public var created: Timestamp
    public var updated: Timestamp

    public init(id: String, sequence: Int64, spec: DownloadSpec, owner: Owner, created: Timestamp) {
        self.id = id
        self.kind = .download
        self.method = nil
        self.fields = []
        self.fileField = nil
        self.responseStatus = nil
        self.responseBody = nil
        self.sequence = sequence
        self.url = spec.url
        self.output = spec.output
        self.state = .queued
        self.priority = spec.priority
        self.allowMetered = spec.allowMetered
        self.allowInsecureAuth = spec.allowInsecureAuth
        self.constraints = spec.constraints
        self.sha256 = spec.sha256
        self.owner = owner
        self.bytesReceived = 0
        self.bytesTotal = nil
        self.reason = nil
        self.validators = Validators()
        self.current = Validators()
        self.refreshSeconds = spec.refreshSeconds
        self.lastChecked = nil
        self.nextCheck = nil
        self.attempts = 0
        self.retryAt = nil
        self.created = created
        self.updated = created
    }

    /// An upload of `spec.file`.
    public init(id: String, sequence: Int64, upload spec: UploadSpec, owner: Owner, created: Timestamp) {
        self.init(id: id, sequence: sequence, spec: DownloadSpec(url: spec.url, output: spec.file, allowMetered: spec.allowMetered,
                                                                 priority: spec.priority, allowInsecureAuth: spec.allowInsecureAuth),
                  owner: owner, created: created)
        constraints = spec.constraints
        kind = .upload
        method = spec.method
        fields = spec.method == .post ? spec.fields : []
        fileField = spec.method == .post ? spec.fileField : nil
    }

    /// The partial file: next to the output (same file system, so the final rename is atomic), hidden, named by job.
    public var partialPath: String {
        let slash = output.lastIndex(of: "/")!
        let directory = output[..<slash]
        let name = output[output.index(after: slash)...]
        return "\(directory)/.\(name).\(id).part"
    }

    /// The job has put a file in place before, so a new transfer is a refresh check (conditional, and the
    /// file in place stays until a newer one is complete).
    public var isRefreshing: Bool { lastChecked != nil && state != .completed }

    /// A fresh random job id: 16 lowercase hex digits.
    public static func newID<G: RandomNumberGenerator>(using generator: inout G) -> String {
        let value = UInt64.random(in: .min ... .max, using: &generator)
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// The job as clients see it (docs/transfers.md): unknown values are `null`, the owner is its uid.
extension Job: Codable {
    private enum CodingKeys: String, CodingKey {
        case id, sequence, url, output, state, priority, allowMetered, sha256, uid, bytesReceived, bytesTotal, reason
        case etag, lastModified, attempts, retryAt, created, updated, refreshEvery, lastChecked, nextCheck, allowInsecureAuth
        case kind, method, fields, fileField, responseStatus, responseBody, constraints
    }

    /// The validators shown: those of the file in place once there is one, else of the version being fetched.
    private var shownValidators: Validators { current.etag != nil || current.lastModified != nil ? current : validators }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(kind, forKey: .kind)
        if kind == .upload {
            try c.encode(method, forKey: .method)
            try c.encode(fields, forKey: .fields)
            try c.encode(fileField, forKey: .fileField)
            try c.encode(responseStatus, forKey: .responseStatus)
            try c.encode(responseBody, forKey: .responseBody)
        }
        try c.encode(sequence, forKey: .sequence)
        try c.encode(url, forKey: .url)
        try c.encode(output, forKey: .output)
        try c.encode(state, forKey: .state)
        try c.encode(priority, forKey: .priority)
        try c.encode(allowMetered, forKey: .allowMetered)
        try c.encode(allowInsecureAuth, forKey: .allowInsecureAuth)
        // Only when there are any: the jobs without (most) keep their wire form, and events stay small.
        if !constraints.isEmpty { try c.encode(constraints, forKey: .constraints) }
        try c.encode(sha256, forKey: .sha256)
        try c.encode(owner.uid, forKey: .uid)
        try c.encode(bytesReceived, forKey: .bytesReceived)
        try c.encode(bytesTotal, forKey: .bytesTotal)
        try c.encode(reason, forKey: .reason)
        try c.encode(shownValidators.etag, forKey: .etag)
        try c.encode(shownValidators.lastModified, forKey: .lastModified)
        try c.encode(refreshSeconds, forKey: .refreshEvery)
        try c.encode(lastChecked, forKey: .lastChecked)
        try c.encode(nextCheck, forKey: .nextCheck)
        try c.encode(attempts, forKey: .attempts)
        try c.encode(retryAt, forKey: .retryAt)
        try c.encode(created, forKey: .created)
        try c.encode(updated, forKey: .updated)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        kind = try c.decodeIfPresent(JobKind.self, forKey: .kind) ?? .download
        method = try c.decodeIfPresent(UploadMethod.self, forKey: .method)
        fields = try c.decodeIfPresent([FormField].self, forKey: .fields) ?? []
        fileField = try c.decodeIfPresent(String.self, forKey: .fileField)
        responseStatus = try c.decodeIfPresent(Int.self, forKey: .responseStatus)
        responseBody = try c.decodeIfPresent(String.self, forKey: .responseBody)
        sequence = try c.decode(Int64.self, forKey: .sequence)
        url = try c.decode(String.self, forKey: .url)
        output = try c.decode(String.self, forKey: .output)
        state = try c.decode(JobState.self, forKey: .state)
        priority = try c.decode(Priority.self, forKey: .priority)
        allowMetered = try c.decode(Bool.self, forKey: .allowMetered)
        allowInsecureAuth = try c.decodeIfPresent(Bool.self, forKey: .allowInsecureAuth) ?? false
        constraints = try c.decodeIfPresent(JobConstraints.self, forKey: .constraints) ?? JobConstraints()
        sha256 = try c.decodeIfPresent(String.self, forKey: .sha256)
        owner = Owner(uid: try c.decode(UInt32.self, forKey: .uid), gid: 0)
        bytesReceived = try c.decode(Int64.self, forKey: .bytesReceived)
        bytesTotal = try c.decodeIfPresent(Int64.self, forKey: .bytesTotal)
        reason = try c.decodeIfPresent(String.self, forKey: .reason)
        validators = Validators(
            etag: try c.decodeIfPresent(String.self, forKey: .etag),
            lastModified: try c.decodeIfPresent(String.self, forKey: .lastModified)
        )
        refreshSeconds = try c.decodeIfPresent(Int64.self, forKey: .refreshEvery)
        lastChecked = try c.decodeIfPresent(Timestamp.self, forKey: .lastChecked)
        current = lastChecked == nil ? Validators() : validators
        nextCheck = try c.decodeIfPresent(Timestamp.self, forKey: .nextCheck)
        attempts = try c.decode(Int.self, forKey: .attempts)
        retryAt = try c.decodeIfPresent(Timestamp.self, forKey: .retryAt)
        created = try c.decode(Timestamp.self, forKey: .created)
        updated = try c.decode(Timestamp.self, forKey: .updated)
    }
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
