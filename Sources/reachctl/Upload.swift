import ArgumentParser
import ReachdClient
import ReachdTransferModel
import ReachdTransferProtocol

extension Reachctl {
    struct Upload: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue uploads that wait for an unmetered route (served by reachd-transfers).",
            discussion: "list, show, pause, resume, cancel, remove, clean and wait act on every job, downloads too.\n\n"
                + examples(
                    "reachctl upload add report.pdf --to https://files.example/report.pdf",
                    "reachctl upload wait 3f2a9c01d4e8b7a6"
                ),
            subcommands: [Add.self, JobsVerb<UploadGroup, JobVerbs.List>.self, JobVerb<UploadGroup, JobVerbs.Show>.self, JobVerb<UploadGroup, JobVerbs.Pause>.self,
                          JobVerb<UploadGroup, JobVerbs.Resume>.self, JobVerb<UploadGroup, JobVerbs.Cancel>.self, JobVerb<UploadGroup, JobVerbs.Remove>.self,
                          JobsVerb<UploadGroup, JobVerbs.Clean>.self, WaitJob<UploadGroup>.self,
                          LimitJob<UploadGroup>.self]
        )
    }
}

extension Reachctl.Upload {
    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Queue an upload; prints the job id.",
            discussion: examples(
                "reachctl upload add report.pdf --to https://files.example/report.pdf",
                "reachctl upload add photo.jpg --to https://up.example/form --method POST --field album=2026"
            )
        )

        @OptionGroup var transfers: TransferOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup(visibility: .private) var unused: ConnectionOptions
        @Argument(help: "The file to send (relative paths are taken from the current directory).", completion: .file()) var file: String
        @Option(help: "http:// or https:// URL.") var to: String
        @Option(help: "PUT (the file is the body) or POST (multipart/form-data).", completion: .list(["PUT", "POST"])) var method: String = "PUT"
        @Option(name: .customLong("field"), help: "POST: a form field NAME=VALUE sent before the file (repeatable).") var fields: [String] = []
        @Option(help: "POST: the name of the file's part.") var fileField: String = "file"
        @Flag(help: "Run even when the route to the server is metered.") var allowMetered = false
        @Flag(help: "Send netrc credentials over plain http too (they are readable on the way).") var allowInsecureAuth = false
        @Option(help: "low, normal or high.", completion: .list(Priority.allCases.map(\.rawValue))) var priority: String = "normal"
        @OptionGroup(title: "Constraints") var constraints: ConstraintOptions
        @OptionGroup(title: "Proxy") var proxy: ProxyOption
        @OptionGroup var rate: RateOption

        private var json: Bool { output.json }

        func validate() throws {
            try unused.refuse()
            guard UploadMethod(rawValue: method.uppercased()) != nil else { throw ValidationError("--method must be PUT or POST") }
            guard Priority(rawValue: priority) != nil else { throw ValidationError("--priority must be low, normal or high") }
            if let bad = fields.first(where: { !$0.contains("=") || $0.hasPrefix("=") }) { throw ValidationError("--field must be NAME=VALUE: \(bad)") }
            if !fields.isEmpty && method.uppercased() != "POST" { throw ValidationError("--field needs --method POST") }
        }

        func run() throws {
            let path = absolutePath(file)
            let form = fields.map { field in
                let equals = field.firstIndex(of: "=")!
                return FormField(name: String(field[..<equals]), value: String(field[field.index(after: equals)...]))
            }
            var spec = UploadSpec(file: path, url: to, method: UploadMethod(rawValue: method.uppercased()) ?? .put, fields: form,
                                  fileField: fileField, allowMetered: allowMetered, priority: Priority(rawValue: priority) ?? .normal,
                                  allowInsecureAuth: allowInsecureAuth)
            spec.constraints = try constraints.constraints()
            spec.proxy = try proxy.asked(for: spec.url)
            spec.maxRate = rate.bytesPerSecond
            let client = transfers.connect()
            let job = transferCall { () throws(ClientError) in try client.job(TransferRequest(op: .upload, upload: spec)) }
            printLine(json ? job.json : job.id.terminalSafe)
        }
    }
}
