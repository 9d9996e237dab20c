import ArgumentParser
import ReachdClient
import ReachdModel
import ReachdProtocol
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// Options of every `download` subcommand.
struct TransferOptions: ParsableArguments {
    @Flag(help: "Use the system instance (/run/reachd/transfers.sock; the default for root) rather than your own.")
    var system = false

    @Option(help: "reachd-transfers' socket. Default: $REACHD_TRANSFERS_SOCKET, else the system instance's with --system or as root, else your own instance's, $XDG_RUNTIME_DIR/reachd-transfers.sock.")
    var transfersSocket: String?

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
            fail("\(error)".replacingReachd)
        }
    }
}

extension String {
    /// Client errors name "reachd"; here the peer is reachd-transfers.
    var replacingReachd: String {
        var text = self
        for phrase in ["to reachd at", "(is reachd running?)", "reachd refused", "reachd closed", "from reachd"] {
            let fixed = phrase.replacing("reachd", with: "reachd-transfers", maxReplacements: 1)
            text = text.replacing(phrase, with: fixed)
        }
        return text
    }
}

/// `path` taken from the current directory when relative (the daemon has no idea of ours).
func absolutePath(_ path: String) -> String {
    guard !path.hasPrefix("/") else { return path }
    guard let cwd = getcwd(nil, 0) else { fail("cannot read the current directory") }
    defer { free(cwd) }
    return String(cString: cwd) + "/" + path
}

/// Runs one request, failing with exit status 2 and the service's message when it is refused.
func transferCall<T>(_ body: () throws(ClientError) -> T) -> T {
    do {
        return try body()
    } catch {
        fail("\(error)".replacingReachd)
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

/// `ID  STATE  RECEIVED/TOTAL  OUTPUT  (reason)`; uploads: `ID  upload STATE  SENT/TOTAL  FILE -> URL  [status]`;
/// terminal-safe (paths, URLs and reasons come from other users and servers).
func humanLine(_ job: Job) -> String {
    if job.kind == .upload {
        let total = job.bytesTotal.map(byteCount) ?? "?"
        let status = job.responseStatus.map { "  [\($0)]" } ?? ""
        let reason = job.reason.map { "  (\($0))" } ?? ""
        return "\(job.id)  upload \(job.state.rawValue)  \(byteCount(job.bytesReceived))/\(total)  \(job.output) -> \(job.url)\(status)\(reason)".terminalSafe
    }
    let total = job.bytesTotal.map(byteCount) ?? "?"
    let percent = job.bytesTotal.flatMap { $0 > 0 ? " \(Int(Double(job.bytesReceived) * 100 / Double($0)))%" : nil } ?? ""
    let reason = job.reason.map { "  (\($0))" } ?? ""
    let refresh = job.nextCheck.map { "  next check \($0)" } ?? ""
    return "\(job.id)  \(job.state.rawValue)  \(byteCount(job.bytesReceived))/\(total)\(percent)  \(job.output)\(reason)\(refresh)".terminalSafe
}

extension Reachctl {
    struct Download: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue downloads that wait for an unmetered route (served by reachd-transfers).",
            discussion: "Exit status: 0 done, 1 failed/cancelled/timed out (wait), 2 error.",
            subcommands: [Add.self, List.self, Show.self, Pause.self, Resume.self, Cancel.self, Refresh.self, Remove.self, Clean.self,
                          WaitJob.self]
        )
    }
}

extension Reachctl.Download {
    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Queue a download; prints the job id.")

        @OptionGroup var transfers: TransferOptions
        @Argument(help: "http:// or https:// URL.") var url: String
        @Option(help: "Where the finished file goes (relative paths are taken from the current directory).") var output: String
        @Flag(help: "Run even when the route to the server is metered.") var allowMetered = false
        @Flag(help: "Send netrc credentials over plain http too (they are readable on the way).") var allowInsecureAuth = false
        @Option(help: "low, normal or high.") var priority: String = "normal"
        @Option(help: "Expected SHA-256 (hex) of the whole file; a mismatch fails the job.") var sha256: String?
        @Option(help: "Keep the file fresh: check the server this often (e.g. 90s, 15m, 6h, 2d) with a conditional request.")
        var refreshEvery: String?
        @Flag(help: "Print {\"id\": …} and the job as JSON.") var json = false

        func validate() throws {
            guard Priority(rawValue: priority) != nil else { throw ValidationError("--priority must be low, normal or high") }
            if let refreshEvery, RefreshInterval.seconds(refreshEvery) == nil {
                throw ValidationError("--refresh-every must be a duration from 1s to 365d, like 90s, 15m, 6h or 2d")
            }
            if let sha256, sha256.count != 64 || !sha256.allSatisfy(\.isHexDigit) {
                throw ValidationError("--sha256 must be 64 hex digits")
            }
        }

        func run() throws {
            let spec = DownloadSpec(url: url, output: absolutePath(output), allowMetered: allowMetered, priority: Priority(rawValue: priority) ?? .normal,
                                    sha256: sha256?.lowercased(), refreshSeconds: refreshEvery.flatMap(RefreshInterval.seconds),
                                    allowInsecureAuth: allowInsecureAuth)
            let client = transfers.connect()
            let job = transferCall { () throws(ClientError) in try client.job(TransferRequest(op: .add, download: spec)) }
            printLine(json ? job.json : job.id.terminalSafe)
        }
    }

    /// list, clean: an operation whose answer is jobs, printed a line each or as a JSON array.
    struct JobsArguments: ParsableArguments {
        @OptionGroup var transfers: TransferOptions
        @Flag(help: "Print a JSON array.") var json = false

        func perform(_ op: TransferRequest.Operation) {
            let client = transfers.connect()
            let jobs = transferCall { () throws(ClientError) in try client.jobs(TransferRequest(op: op)) }
            if json { return printLine(jobsJSON(jobs)) }
            for job in jobs { printLine(humanLine(job)) }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List your jobs (root: everyone's).")
        @OptionGroup var jobs: JobsArguments
        func run() throws { jobs.perform(.list) }
    }

    struct Clean: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove your finished jobs (completed, failed, cancelled; root: everyone's) from the list; prints them.",
            discussion: "Downloads kept fresh (--refresh-every) are not finished. The files stay where they are."
        )

        @OptionGroup var jobs: JobsArguments
        func run() throws { jobs.perform(.clean) }
    }

    /// show, pause, resume, cancel, refresh, remove: one job id, one job printed.
    struct JobArguments: ParsableArguments {
        @OptionGroup var transfers: TransferOptions
        @Argument(help: "Job id.") var id: String
        @Flag(help: "Print the job as JSON.") var json = false

        func perform(_ op: TransferRequest.Operation) {
            let client = transfers.connect()
            let job = transferCall { () throws(ClientError) in try client.job(TransferRequest(op: op, job: id)) }
            printLine(json ? job.json : humanLine(job))
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print one job.")
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.show) }
    }

    struct Pause: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Pause a job (its partial file is kept).")
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.pause) }
    }

    struct Resume: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Resume a paused job, retry a deferred or failed one now.")
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.resume) }
    }

    struct Cancel: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Cancel a job and remove its partial file.")
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.cancel) }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a finished job from the list (its file stays); prints it.")
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.remove) }
    }

    struct Refresh: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check a completed download against the server now (conditional request).")
        @OptionGroup var job: JobArguments
        func run() throws { job.perform(.refresh) }
    }

    struct WaitJob: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "wait",
            abstract: "Follow a job until it ends: a progress bar on a terminal, lines otherwise.",
            discussion: "Exit 0 when completed, 1 when failed, cancelled or timed out, 2 on errors."
        )

        @OptionGroup var transfers: TransferOptions
        @Argument(help: "Job id.") var id: String
        @Option(help: "Give up after this many seconds (default: wait forever).") var timeout: Double?
        @Flag(help: "Print each change of the job as a JSON line.") var json = false

        func run() throws {
            if let timeout, !(timeout >= 0) { throw ValidationError("--timeout must be a number of seconds >= 0") }
            let client = transfers.connect()
            let jobs = transferCall { () throws(ClientError) in try client.jobs(TransferRequest(op: .watch, job: id)) }
            guard var job = jobs.first else { fail("no job \(id)") }
            let deadline = timeout.map { MonotonicClock.seconds() + $0 }
            var progress = ProgressDisplay(terminal: isatty(1) == 1 && !json)
            while true {
                if json { printLine(job.json) } else { progress.show(job) }
                if job.state.isTerminal { break }
                let left = deadline.map { $0 - MonotonicClock.seconds() }
                if let left, left <= 0 { break }
                guard let next = transferCall({ () throws(ClientError) in try client.nextEvent(timeout: left) }) else { break }
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

/// The live progress bar (terminal) or plain lines (a line per state change, at most one a second otherwise).
struct ProgressDisplay {
    let terminal: Bool
    private var lastState: JobState?
    private var lastLine = 0.0
    private var rateSample: (bytes: Int64, seconds: Double)?
    private var rate = 0.0
    private var drawn = false

    init(terminal: Bool) { self.terminal = terminal }

    mutating func show(_ job: Job) {
        let now = MonotonicClock.seconds()
        if let sample = rateSample, now - sample.seconds >= 0.5 {
            let instant = Double(job.bytesReceived - sample.bytes) / (now - sample.seconds)
            rate = rate == 0 ? instant : 0.7 * rate + 0.3 * instant
            rateSample = (job.bytesReceived, now)
        } else if rateSample == nil || job.state != .running {
            rateSample = (job.bytesReceived, now)
        }
        if job.state != .running { rate = 0 }
        if terminal {
            writeAll(1, "\r\u{1b}[K" + bar(job))
            drawn = true
            if job.state != lastState && job.state != .running, let reason = job.reason {
                writeAll(1, "\n" + reason.terminalSafe + "\n")
                drawn = false
            }
        } else if job.state != lastState || now - lastLine >= 1 {
            printLine(bar(job) + (job.state != .running ? job.reason.map { "  (\($0))".terminalSafe } ?? "" : ""))
            lastLine = now
        }
        lastState = job.state
    }

    mutating func finish() {
        if terminal && drawn { writeAll(1, "\n") }
    }

    /// The job's progress, terminal-safe.
    private func bar(_ job: Job) -> String {
        let width = 30
        var text = "\(job.id.terminalSafe) \(job.state.rawValue) "
        if let total = job.bytesTotal, total > 0 {
            let fraction = min(1, Double(job.bytesReceived) / Double(total))
            let filled = Int(fraction * Double(width))
            text += "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            text += "\(Int(fraction * 100))% \(byteCount(job.bytesReceived))/\(byteCount(total))"
            if rate > 0 {
                let eta = Int(Double(total - job.bytesReceived) / rate)
                text += " \(byteCount(Int64(rate)))/s ETA \(eta / 60):" + (eta % 60 < 10 ? "0" : "") + "\(eta % 60)"
            }
        } else {
            text += byteCount(job.bytesReceived)
            if rate > 0 { text += " \(byteCount(Int64(rate)))/s" }
        }
        return text
    }
}

extension Reachctl {
    struct Upload: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue uploads that wait for an unmetered route (served by reachd-transfers).",
            discussion: "list, show, pause, resume, cancel, remove, clean and wait are the download commands': they act on every job.",
            subcommands: [UploadAdd.self, Download.List.self, Download.Show.self, Download.Pause.self, Download.Resume.self,
                          Download.Cancel.self, Download.Remove.self, Download.Clean.self, Download.WaitJob.self]
        )
    }

    struct UploadAdd: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Queue an upload; prints the job id.")

        @OptionGroup var transfers: TransferOptions
        @Argument(help: "The file to send (relative paths are taken from the current directory).") var file: String
        @Option(help: "http:// or https:// URL.") var to: String
        @Option(help: "PUT (the file is the body) or POST (multipart/form-data).") var method: String = "PUT"
        @Option(name: .customLong("field"), help: "POST: a form field NAME=VALUE sent before the file (repeatable).") var fields: [String] = []
        @Option(help: "POST: the name of the file's part.") var fileField: String = "file"
        @Flag(help: "Run even when the route to the server is metered.") var allowMetered = false
        @Flag(help: "Send netrc credentials over plain http too (they are readable on the way).") var allowInsecureAuth = false
        @Option(help: "low, normal or high.") var priority: String = "normal"
        @Flag(help: "Print the job as JSON.") var json = false

        func validate() throws {
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
            let spec = UploadSpec(file: path, url: to, method: UploadMethod(rawValue: method.uppercased()) ?? .put, fields: form,
                                  fileField: fileField, allowMetered: allowMetered, priority: Priority(rawValue: priority) ?? .normal,
                                  allowInsecureAuth: allowInsecureAuth)
            let client = transfers.connect()
            let job = transferCall { () throws(ClientError) in try client.job(TransferRequest(op: .upload, upload: spec)) }
            printLine(json ? job.json : job.id.terminalSafe)
        }
    }
}

extension Reachctl {
    struct Fetch: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Get a URL through reachd-transfers' offline cache: from the network when the route allows, else the cached copy.",
            discussion: "Says on stderr when (and why) the cached copy was used and how old it is. Exit 0 with a body, 1 when neither the network nor the cache has one, 2 on errors."
        )

        @OptionGroup var transfers: TransferOptions
        @Argument(help: "http:// or https:// URL.") var url: String
        @Option(help: "Where the body goes; - (the default) is standard output.") var output: String = "-"
        @Flag(help: "Also print the metadata (source, reason, age, status, size) as one JSON line on stderr.") var json = false

        func run() throws {
            let client = transfers.connect()
            let reply: TransferReply
            do {
                reply = try client.call(TransferRequest(op: .fetch, fetch: url), timeout: 300)
            } catch {
                if case .refused(let refusal) = error, refusal.code == .unavailable {
                    writeAll(2, "reachctl: \(refusal.message.terminalSafe)\n")
                    throw ExitCode(1)
                }
                fail("\(error)".replacingReachd)
            }
            guard case .fetched(_, let result) = reply else { fail("unexpected reply") }
            copy(result.body, size: result.size)
            if result.source == "cache" {
                writeAll(2, "reachctl: from the cache, \(age(result.age)) old: \((result.reason ?? "").terminalSafe)\n")
            }
            if json { writeAll(2, result.json + "\n") }
        }

        private func copy(_ path: String, size: Int64) {
            let input = open(path, O_RDONLY | O_CLOEXEC)
            guard input >= 0 else { fail("cannot read the cached body \(path): \(String(cString: strerror(errno)))") }
            defer { close(input) }
            let target = output == "-" ? 1 : open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard target >= 0 else { fail("cannot write \(output): \(String(cString: strerror(errno)))") }
            defer { if target != 1 { close(target) } }
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                var done = 0
                while done < n {
                    let w = buffer.withUnsafeBytes { write(target, $0.baseAddress! + done, n - done) }
                    guard w > 0 else { fail("writing \(output): \(String(cString: strerror(errno)))") }
                    done += w
                }
            }
        }

        private func age(_ seconds: Int64) -> String {
            if seconds < 120 { return "\(seconds) s" }
            if seconds < 7200 { return "\(seconds / 60) min" }
            if seconds < 172_800 { return "\(seconds / 3600) h \(seconds % 3600 / 60) min" }
            return "\(seconds / 86400) days"
        }
    }
}
