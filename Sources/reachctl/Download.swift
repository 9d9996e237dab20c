import ArgumentParser
import ReachdClient
import ReachdModel
import ReachdProtocol
import ReachdTransferClient
import ReachdTransferModel
import ReachdTransferProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Options of the verbs that ask reachd-transfers (download, upload, fetch).
struct TransferOptions: ParsableArguments {
    @Flag(help: "Use the system instance (/run/reachd/transfers.sock; the default for root) rather than your own.")
    var system = false

    @Option(help: "reachd-transfers' socket. Default: $REACHD_TRANSFERS_SOCKET, else the system instance's with --system or as root, else your own instance's, $XDG_RUNTIME_DIR/reachd-transfers.sock.",
            completion: .file())
    var transfersSocket: String?

    /// Refuses these options for a verb that asks reachd (the root takes them anywhere on the line).
    func refuse() throws {
        if system || transfersSocket != nil {
            throw ValidationError("--system and --transfers-socket are for download, upload and fetch (reachd-transfers); reachd's socket is --socket PATH")
        }
    }

    /// The instance asked, as errors name it.
    var daemon: ServingDaemon { .transfers(system: system || getuid() == 0) }

    func connect() -> TransferClient {
        var environment: [String: String] = [:]
        for key in ["REACHD_TRANSFERS_SOCKET", "XDG_RUNTIME_DIR"] {
            if let value = getenv(key) { environment[key] = String(cString: value) }
        }
        guard let path = TransferSocketPath.clientPath(explicit: transfersSocket, system: system || getuid() == 0, environment: environment) else {
            fail("no socket path: XDG_RUNTIME_DIR is not set (log in, or loginctl enable-linger); pass --system for the system instance, or --transfers-socket PATH")
        }
        do {
            return try TransferClient(path: path)
        } catch {
            fail(error.explained(talkingTo: daemon))
        }
    }
}

/// `path` taken from the current directory when relative (the daemon has no idea of ours).
func absolutePath(_ path: String) -> String {
    guard !path.hasPrefix("/") else { return path }
    guard let cwd = getcwd(nil, 0) else { fail("cannot read the current directory") }
    defer { free(cwd) }
    return String(cString: cwd) + "/" + path
}

/// Runs one request of `daemon`, failing with exit status 2 and the service's message when it is refused.
func transferCall<T>(_ daemon: ServingDaemon, _ body: () throws(ClientError) -> T) -> T {
    do {
        return try body()
    } catch {
        fail(error.explained(talkingTo: daemon))
    }
}

/// `123.4 MiB`
func byteCount(_ bytes: Int64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes), unit = 0
    while value >= 1024 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : formatted(value, digits: 1) + " " + units[unit]
}

func formatted(_ value: Double, digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    let whole = Int64(rounded)
    guard digits > 0 else { return String(whole) }
    let fraction = Int64(((rounded - Double(whole)) * scale).rounded())
    let text = String(fraction)
    return "\(whole)." + String(repeating: "0", count: max(0, digits - text.count)) + text
}

/// `ID  STATE  RECEIVED/TOTAL  OUTPUT  (reason)  {constraints}`; uploads: `ID  upload STATE  SENT/TOTAL  FILE -> URL  [status]`;
/// terminal-safe (paths, URLs and reasons come from other users and servers).
func humanLine(_ job: Job) -> String {
    let constraints = job.constraints.isEmpty ? "" : "  {\(job.constraints.summary)}"
    if job.isUpload {
        let total = job.bytesTotal.map(byteCount) ?? "?"
        let status = job.upload?.answer.map { "  [\($0.status)]" } ?? ""
        let reason = job.reason.map { "  (\($0))" } ?? ""
        return "\(job.id)  upload \(job.state.rawValue)  \(byteCount(job.bytesMoved))/\(total)  \(job.file) -> \(job.url)\(status)\(reason)\(constraints)"
            .terminalSafe
    }
    let total = job.bytesTotal.map(byteCount) ?? "?"
    let percent = job.bytesTotal.flatMap { $0 > 0 ? " \(Int(Double(job.bytesMoved) * 100 / Double($0)))%" : nil } ?? ""
    let reason = job.reason.map { "  (\($0))" } ?? ""
    let refresh = job.download?.nextCheck.map { "  next check \($0)" } ?? ""
    return "\(job.id)  \(job.state.rawValue)  \(byteCount(job.bytesMoved))/\(total)\(percent)  \(job.file)\(reason)\(refresh)\(constraints)".terminalSafe
}

extension Reachctl {
    struct Download: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue downloads that wait for an unmetered route (served by reachd-transfers).",
            discussion: "Exit status: 0 done, 1 failed/cancelled/timed out (wait), 2 error.\n\n" + examples(
                "reachctl download add https://mirror.example/big.iso --output big.iso",
                "reachctl download wait 3f2a9c01d4e8b7a6",
                "reachctl --system download list"
            ),
            subcommands: [Add.self, List.self, Show.self, Pause.self, Resume.self, Cancel.self, Refresh.self, Remove.self, Clean.self,
                          WaitJob.self]
        )
    }
}

extension Reachctl.Download {
    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue a download; prints the job id.",
            discussion: examples(
                "reachctl download add https://mirror.example/big.iso --output big.iso",
                "reachctl download add https://mirror.example/big.iso --output /srv/mirror/big.iso --priority high --sha256 HEX",
                "reachctl download add https://example.org/feed.xml --output feed.xml --refresh-every 6h",
                "reachctl download add https://mirror.example/big.iso --output big.iso --window 01:00-06:00 --power on-ac-power",
                "reachctl download add https://mirror.example/big.iso --output big.iso --network not-roaming,within-budget"
            )
        )

        @OptionGroup var transfers: TransferOptions
        @OptionGroup var printing: OutputOptions
        @OptionGroup(visibility: .private) var unused: ConnectionOptions
        @Argument(help: "http:// or https:// URL.") var url: String
        @Option(help: "Where the finished file goes (relative paths are taken from the current directory).", completion: .file()) var output: String
        @Flag(help: "Run even when the route to the server is metered.") var allowMetered = false
        @Flag(help: "Send netrc credentials over plain http too (they are readable on the way).") var allowInsecureAuth = false
        @Option(help: "low, normal or high.", completion: .list(Priority.allCases.map(\.rawValue))) var priority: String = "normal"
        @Option(help: "Expected SHA-256 (hex) of the whole file; a mismatch fails the job.") var sha256: String?
        @Option(help: "Keep the file fresh: check the server this often (e.g. 90s, 15m, 6h, 2d) with a conditional request.")
        var refreshEvery: String?
        @OptionGroup(title: "Constraints") var constraints: ConstraintOptions

        private var json: Bool { printing.json }

        func validate() throws {
            try unused.refuse()
            guard Priority(rawValue: priority) != nil else { throw ValidationError("--priority must be low, normal or high") }
            if let refreshEvery, RefreshInterval.seconds(refreshEvery) == nil {
                throw ValidationError("--refresh-every must be a duration from 1s to 365d, like 90s, 15m, 6h or 2d")
            }
            if let sha256, sha256.count != 64 || !sha256.allSatisfy(\.isHexDigit) {
                throw ValidationError("--sha256 must be 64 hex digits")
            }
        }

        func run() throws {
            var spec = DownloadSpec(url: url, output: absolutePath(output), allowMetered: allowMetered, priority: Priority(rawValue: priority) ?? .normal,
                                    sha256: sha256?.lowercased(), refreshSeconds: refreshEvery.flatMap(RefreshInterval.seconds),
                                    allowInsecureAuth: allowInsecureAuth)
            spec.constraints = try constraints.constraints()
            let client = transfers.connect()
            let job = transferCall(transfers.daemon) { () throws(ClientError) in try client.job(TransferRequest(op: .add, download: spec)) }
            printLine(json ? job.json : job.id.terminalSafe)
        }
    }

    /// list, clean: an operation whose answer is jobs, printed a line each or as a JSON array.
    struct JobsArguments: ParsableArguments {
        @OptionGroup var transfers: TransferOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup(visibility: .private) var unused: ConnectionOptions

        private var json: Bool { output.json }

        func validate() throws { try unused.refuse() }

        func perform(_ op: TransferRequest.Operation) {
            let client = transfers.connect()
            let jobs = transferCall(transfers.daemon) { () throws(ClientError) in try client.jobs(TransferRequest(op: op)) }
            if json { return printLine(jobsJSON(jobs)) }
            for job in jobs { printLine(humanLine(job)) }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List your jobs (root: everyone's).",
            discussion: examples("reachctl download list", "reachctl --system --json download list")
        )
        @OptionGroup var jobs: JobsArguments
        func run() throws { jobs.perform(.list) }
    }

    struct Clean: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove your finished jobs (completed, failed, cancelled; root: everyone's) from the list; prints them.",
            discussion: "Downloads kept fresh (--refresh-every) are not finished. The files stay where they are.\n\n"
                + examples("reachctl download clean", "reachctl --system download clean")
        )

        @OptionGroup var jobs: JobsArguments
        func run() throws { jobs.perform(.clean) }
    }

    /// show, pause, resume, cancel, refresh, remove: one job id, one job printed.
    struct JobArguments: ParsableArguments {
        @OptionGroup var transfers: TransferOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup(visibility: .private) var unused: ConnectionOptions
        @Argument(help: "Job id.", completion: JobIDCompletion.kind) var id: String

        private var json: Bool { output.json }

        func validate() throws { try unused.refuse() }

        func perform(_ op: TransferRequest.Operation) {
            let client = transfers.connect()
            let job = transferCall(transfers.daemon) { () throws(ClientError) in try client.job(TransferRequest(op: op, job: id)) }
            printLine(json ? job.json : humanLine(job))
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print one job.",
            discussion: examples("reachctl download show 3f2a9c01d4e8b7a6", "reachctl --json download show 3f2a9c01d4e8b7a6")
        )
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.show) }
    }

    struct Pause: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pause a job (its partial file is kept).",
            discussion: examples("reachctl download pause 3f2a9c01d4e8b7a6", "reachctl --system download pause 3f2a9c01d4e8b7a6")
        )
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.pause) }
    }

    struct Resume: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Resume a paused job, retry a deferred or failed one now.",
            discussion: examples("reachctl download resume 3f2a9c01d4e8b7a6", "reachctl download resume 3f2a9c01d4e8b7a6 && reachctl download wait 3f2a9c01d4e8b7a6")
        )
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.resume) }
    }

    struct Cancel: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel a job and remove its partial file.",
            discussion: examples("reachctl download cancel 3f2a9c01d4e8b7a6", "reachctl --system download cancel 3f2a9c01d4e8b7a6")
        )
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.cancel) }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a finished job from the list (its file stays); prints it.",
            discussion: examples("reachctl download remove 3f2a9c01d4e8b7a6", "reachctl --json download remove 3f2a9c01d4e8b7a6")
        )
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.remove) }
    }

    struct Refresh: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a completed download against the server now (conditional request).",
            discussion: examples("reachctl download refresh 3f2a9c01d4e8b7a6", "reachctl --json download refresh 3f2a9c01d4e8b7a6")
        )
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.refresh) }
    }

    struct WaitJob: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "wait",
            abstract: "Follow a job until it ends: a progress bar on a terminal, lines otherwise.",
            discussion: "Exit 0 when completed, 1 when failed, cancelled or timed out, 2 on errors.\n\n"
                + examples("reachctl download wait 3f2a9c01d4e8b7a6", "reachctl download wait 3f2a9c01d4e8b7a6 --timeout 3600 --json")
        )

        @OptionGroup var transfers: TransferOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup(visibility: .private) var unused: ConnectionOptions
        @Argument(help: "Job id.", completion: JobIDCompletion.kind) var id: String
        @Option(help: "Give up after this many seconds (default: wait forever).") var timeout: Double?

        private var json: Bool { output.json }

        func validate() throws {
            try unused.refuse()
            if let timeout, !(timeout >= 0) { throw ValidationError("--timeout must be a number of seconds >= 0") }
        }

        func run() throws {
            let client = transfers.connect()
            let jobs = transferCall(transfers.daemon) { () throws(ClientError) in try client.jobs(TransferRequest(op: .watch, job: id)) }
            guard var job = jobs.first else { fail("no job \(id)") }
            let deadline = timeout.map { MonotonicClock.seconds() + $0 }
            var progress = ProgressDisplay(terminal: isatty(1) == 1 && !json)
            while true {
                if json { printLine(job.json) } else { progress.show(job) }
                if job.state.isTerminal { break }
                let left = deadline.map { $0 - MonotonicClock.seconds() }
                if let left, left <= 0 { break }
                guard let next = transferCall(transfers.daemon, { () throws(ClientError) in try client.nextEvent(timeout: left) }) else { break }
                job = next
            }
            progress.finish()
            if job.state == .completed { return }
            if !job.state.isTerminal {
                writeAll(2, "reachctl: timed out after \(timeout ?? 0)s; job \(job.id.terminalSafe) is \(job.state.rawValue)\n")
            } else if let reason = job.reason {
                writeAll(2, "reachctl: job \(job.id): \(reason)".terminalSafe + "\n")
            }
            throw ExitCode(1)
        }
    }
}
