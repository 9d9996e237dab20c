import ReachdModel

extension Job {
    /// What a job moves, with what only that kind of job has: a download can be kept fresh and resumed, an
    /// upload has a form and an answer. A record mixing the two cannot be built.
    public enum Kind: Hashable, Sendable {
        case download(Download)
        case upload(Upload)

        /// The kind's name, as stored and sent (`download`, `upload`).
        public var name: JobKind {
            switch self {
            case .download: .download
            case .upload: .upload
            }
        }
    }

    /// What only a download has.
    public struct Download: Hashable, Sendable {
        /// Absolute path of the finished file.
        public var output: String
        /// Bytes of the file on disk: the partial file while running.
        public var bytesOnDisk: Int64
        /// Expected SHA-256 of the whole file, lowercase hex.
        public var sha256: String?
        /// Validators of the version the partial file holds.
        public var partial: Validators
        /// Validators of the file in place at the output (set when a download completes): refresh checks send them.
        public var installed: Validators
        /// When the file in place was last confirmed or replaced (a completed download counts); nil before.
        public var lastChecked: Timestamp?
        /// Check the server for a newer file this often (seconds); nil for a one-off download.
        public var refreshSeconds: Int64?
        /// When the next check of the file in place is due (kept fresh, or asked for once); nil when none is planned.
        public var nextCheck: Timestamp?

        public init(output: String, bytesOnDisk: Int64 = 0, sha256: String? = nil, partial: Validators = Validators(),
                    installed: Validators = Validators(), lastChecked: Timestamp? = nil, refreshSeconds: Int64? = nil,
                    nextCheck: Timestamp? = nil) {
            self.output = output
            self.bytesOnDisk = bytesOnDisk
            self.sha256 = sha256
            self.partial = partial
            self.installed = installed
            self.lastChecked = lastChecked
            self.refreshSeconds = refreshSeconds
            self.nextCheck = nextCheck
        }

        /// What a client asked for, nothing fetched yet.
        public init(_ spec: DownloadSpec) {
            self.init(output: spec.output, sha256: spec.sha256, refreshSeconds: spec.refreshSeconds)
        }
    }

    /// What only an upload has.
    public struct Upload: Hashable, Sendable {
        /// Absolute path of the file sent.
        public var source: String
        /// Bytes sent in the current attempt.
        public var bytesSent: Int64
        public var form: Form
        /// The server's final answer, once there is one.
        public var answer: Answer?

        public init(source: String, bytesSent: Int64 = 0, form: Form, answer: Answer? = nil) {
            self.source = source
            self.bytesSent = bytesSent
            self.form = form
            self.answer = answer
        }

        /// What a client asked for, nothing sent yet.
        public init(_ spec: UploadSpec) {
            self.init(source: spec.file, form: spec.method == .put ? .put : .post(fields: spec.fields, fileField: spec.fileField))
        }

        /// How the file is sent: PUT (the file is the body) or POST (`multipart/form-data`, text fields before the file part).
        public enum Form: Hashable, Sendable {
            case put
            case post(fields: [FormField], fileField: String)

            /// From a stored or sent record's parts; a PUT with form fields, or a POST without a file field, is refused.
            public init(method: UploadMethod, fields: [FormField], fileField: String?) throws(RecordError) {
                switch method {
                case .put:
                    guard fields.isEmpty, fileField == nil else { throw RecordError("a PUT upload has no form fields") }
                    self = .put
                case .post:
                    guard let fileField else { throw RecordError("a POST upload needs the file part's name") }
                    self = .post(fields: fields, fileField: fileField)
                }
            }

            public var method: UploadMethod {
                switch self {
                case .put: .put
                case .post: .post
                }
            }

            /// POST: the text fields sent before the file; PUT: none.
            public var fields: [FormField] {
                if case .post(let fields, _) = self { fields } else { [] }
            }

            /// POST: the file part's name; PUT: nil.
            public var fileField: String? {
                if case .post(_, let fileField) = self { fileField } else { nil }
            }
        }

        /// The server's status and the start of its answer (at most 1 KiB).
        public struct Answer: Hashable, Sendable {
            public var status: Int
            public var body: String?

            public init(status: Int, body: String?) {
                self.status = status
                self.body = body
            }
        }
    }

    /// A stored or sent job record whose parts contradict its kind (say, an upload kept fresh).
    public struct RecordError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String

        public init(_ description: String) { self.description = description }
    }
}

extension Job {
    /// A background transfer yields to other traffic: every job unless it asks otherwise (`--now`, `--priority high`).
    public var isBackground: Bool { !constraints.now && priority != .high }
}
