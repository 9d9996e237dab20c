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
    /// The job's own proxy (`Job.proxy`).
    public var proxy: String?
    /// The job's own rate cap (`Job.maxRate`).
    public var maxRate: Int64?

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
    /// The job's own proxy (`Job.proxy`).
    public var proxy: String?
    /// The job's own rate cap (`Job.maxRate`).
    public var maxRate: Int64?

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

/// A transfer job as stored, scheduled and shown to clients: what every job has, and in `kind` what only a
/// download or only an upload has.
public struct Job: Hashable, Sendable {
    public var id: String
    /// Insertion order: FIFO within a priority.
    public var sequence: Int64
    public var url: String
    public var state: JobState
    public var priority: Priority
    public var allowMetered: Bool
    /// Send netrc credentials over plain http too.
    public var allowInsecureAuth: Bool
    /// When the job may run, beside its route.
    public var constraints: JobConstraints
    /// The job's own proxy: a proxy URL (`ProxyServer`), `none` (straight to the server), or nil: the instance's
    /// (`[downloads] proxy`, else its environment).
    public var proxy: String?
    /// The proxy the job's requests go through now, without credentials, as clients see it; set by the scheduler.
    public var viaProxy: String?
    /// The job's own cap in bytes per second (`ByteRate`), beside the instance's; nil: none. Changeable while it runs.
    public var maxRate: Int64?
    /// How fast the running transfer moves, and whether it yields to other traffic; shown while it runs, never stored.
    public var pace: JobPace?
    public var owner: Owner
    /// Size of the whole file, nil while unknown.
    public var bytesTotal: Int64?
    /// Why the job is deferred, paused or failed, naming what would unblock it.
    public var reason: String?
    /// What the job moves, with what only that kind of job has.
    public var kind: Kind
    /// Failed attempts since the last progress (drives the backoff).
    public var attempts: Int
    /// When a deferred retry may run again.
    public var retryAt: Timestamp?
    public var created: Timestamp
    public var updated: Timestamp

    /// A job in `kind`, queued, with nothing moved yet.
    public init(id: String, sequence: Int64, url: String, kind: Kind, allowMetered: Bool, priority: Priority, allowInsecureAuth: Bool,
                constraints: JobConstraints, owner: Owner, created: Timestamp) {
        self.id = id
        self.sequence = sequence
        self.url = url
        self.state = .queued
        self.priority = priority
        self.allowMetered = allowMetered
        self.allowInsecureAuth = allowInsecureAuth
        self.constraints = constraints
        self.owner = owner
        self.bytesTotal = nil
        self.reason = nil
        self.kind = kind
        self.attempts = 0
        self.retryAt = nil
        self.created = created
        self.updated = created
    }

    /// A download of `spec.url` to `spec.output`.
    public init(id: String, sequence: Int64, spec: DownloadSpec, owner: Owner, created: Timestamp) {
        self.init(id: id, sequence: sequence, url: spec.url, kind: .download(Download(spec)), allowMetered: spec.allowMetered,
                  priority: spec.priority, allowInsecureAuth: spec.allowInsecureAuth, constraints: spec.constraints, owner: owner,
                  created: created)
        proxy = spec.proxy
        maxRate = spec.maxRate
    }

    /// An upload of `spec.file`.
    public init(id: String, sequence: Int64, upload spec: UploadSpec, owner: Owner, created: Timestamp) {
        self.init(id: id, sequence: sequence, url: spec.url, kind: .upload(Upload(spec)), allowMetered: spec.allowMetered,
                  priority: spec.priority, allowInsecureAuth: spec.allowInsecureAuth, constraints: spec.constraints, owner: owner,
                  created: created)
        proxy = spec.proxy
        maxRate = spec.maxRate
    }

    /// The download's part, nil for an upload.
    public var download: Download? {
        if case .download(let download) = kind { download } else { nil }
    }

    /// When a download kept fresh is next checked; nil for an upload or a download not kept fresh. Read for every
    /// job on each pass of the scheduler: it copies only the time, where `download?.nextCheck` copies the part.
    public var nextCheck: Timestamp? {
        switch kind {
        case .download(let download): download.nextCheck
        case .upload: nil
        }
    }

    /// The upload's part, nil for a download.
    public var upload: Upload? {
        if case .upload(let upload) = kind { upload } else { nil }
    }

    public var isUpload: Bool { upload != nil }

    /// The local file: where a download goes, what an upload sends.
    public var file: String {
        switch kind {
        case .download(let download): download.output
        case .upload(let upload): upload.source
        }
    }

    /// Bytes moved: of a download on disk (partial while running), of an upload sent in the current attempt.
    public var bytesMoved: Int64 {
        get {
            switch kind {
            case .download(let download): download.bytesOnDisk
            case .upload(let upload): upload.bytesSent
            }
        }
        set {
            switch kind {
            case .download(var download): download.bytesOnDisk = newValue; kind = .download(download)
            case .upload(var upload): upload.bytesSent = newValue; kind = .upload(upload)
            }
        }
    }

    /// Changes the download's part; an upload is left as it is.
    public mutating func changeDownload(_ change: (inout Download) -> Void) {
        guard case .download(var download) = kind else { return }
        change(&download)
        kind = .download(download)
    }

    /// Changes the upload's part; a download is left as it is.
    public mutating func changeUpload(_ change: (inout Upload) -> Void) {
        guard case .upload(var upload) = kind else { return }
        change(&upload)
        kind = .upload(upload)
    }

    /// The partial file: next to the output (same file system, so the final rename is atomic), hidden, named by job.
    public var partialPath: String {
        let file = file
        let slash = file.lastIndex(of: "/")!
        let directory = file[..<slash]
        let name = file[file.index(after: slash)...]
        return "\(directory)/.\(name).\(id).part"
    }

    /// The job has put a file in place before, so a new transfer is a refresh check (conditional, and the
    /// file in place stays until a newer one is complete).
    public var isRefreshing: Bool { download?.lastChecked != nil && state != .completed }

    /// A fresh random job id: 16 lowercase hex digits.
    public static func newID<G: RandomNumberGenerator>(using generator: inout G) -> String {
        let value = UInt64.random(in: .min ... .max, using: &generator)
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// How fast a running transfer moves (since its previous progress), and whether it yields: a background transfer whose
/// path's queue was past the target at its latest round trip (`YieldController`).
public struct JobPace: Hashable, Sendable, Codable {
    public var bytesPerSecond: Int64
    public var yielding: Bool

    public init(bytesPerSecond: Int64, yielding: Bool) {
        self.bytesPerSecond = bytesPerSecond
        self.yielding = yielding
    }
}
