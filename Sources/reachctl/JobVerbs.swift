import ArgumentParser
import ReachdClient
import ReachdModel
import ReachdTransferModel
import ReachdTransferProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The command group a shared verb is listed in, whose name its examples use.
protocol JobGroup {
    static var name: String { get }
}

/// `reachctl download`.
enum DownloadGroup: JobGroup { static let name = "download" }
/// `reachctl upload`.
enum UploadGroup: JobGroup { static let name = "upload" }

/// A verb `reachctl download` and `reachctl upload` share: the request it sends, and its help. Its command is
/// `JobsVerb` (no id, jobs printed) or `JobVerb` (one job id, one job printed); `wait` is `WaitJob`.
protocol SharedJobVerb {
    static var operation: TransferRequest.Operation { get }
    static var abstract: String { get }
    /// The help's text, its examples in command group `group`.
    static func discussion(_ group: String) -> String
}

/// The verbs both command groups list, written once.
enum JobVerbs {
    enum List: SharedJobVerb {
        static let operation = TransferRequest.Operation.list
        static let abstract = "List your jobs (root: everyone's)."
        static func discussion(_ group: String) -> String {
            examples("reachctl \(group) list", "reachctl --system --json \(group) list")
        }
    }

    enum Clean: SharedJobVerb {
        static let operation = TransferRequest.Operation.clean
        static let abstract = "Remove your finished jobs (completed, failed, cancelled; root: everyone's) from the list; prints them."
        static func discussion(_ group: String) -> String {
            "Downloads kept fresh (--refresh-every) are not finished. The files stay where they are.\n\n"
                + examples("reachctl \(group) clean", "reachctl --system \(group) clean")
        }
    }

    enum Show: SharedJobVerb {
        static let operation = TransferRequest.Operation.show
        static let abstract = "Print one job."
        static func discussion(_ group: String) -> String {
            examples("reachctl \(group) show 3f2a9c01d4e8b7a6", "reachctl --json \(group) show 3f2a9c01d4e8b7a6")
        }
    }

    enum Pause: SharedJobVerb {
        static let operation = TransferRequest.Operation.pause
        static let abstract = "Pause a job (its partial file is kept)."
        static func discussion(_ group: String) -> String {
            examples("reachctl \(group) pause 3f2a9c01d4e8b7a6", "reachctl --system \(group) pause 3f2a9c01d4e8b7a6")
        }
    }

    enum Resume: SharedJobVerb {
        static let operation = TransferRequest.Operation.resume
        static let abstract = "Resume a paused job, retry a deferred or failed one now."
        static func discussion(_ group: String) -> String {
            examples(
                "reachctl \(group) resume 3f2a9c01d4e8b7a6", "reachctl \(group) resume 3f2a9c01d4e8b7a6 && reachctl \(group) wait 3f2a9c01d4e8b7a6"
            )
        }
    }

    enum Cancel: SharedJobVerb {
        static let operation = TransferRequest.Operation.cancel
        static let abstract = "Cancel a job and remove its partial file."
        static func discussion(_ group: String) -> String {
            examples("reachctl \(group) cancel 3f2a9c01d4e8b7a6", "reachctl --system \(group) cancel 3f2a9c01d4e8b7a6")
        }
    }

    enum Remove: SharedJobVerb {
        static let operation = TransferRequest.Operation.remove
        static let abstract = "Remove a finished job from the list (its file stays); prints it."
        static func discussion(_ group: String) -> String {
            examples("reachctl \(group) remove 3f2a9c01d4e8b7a6", "reachctl --json \(group) remove 3f2a9c01d4e8b7a6")
        }
    }

    /// Downloads only (an upload has nothing to keep fresh).
    enum Refresh: SharedJobVerb {
        static let operation = TransferRequest.Operation.refresh
        static let abstract = "Check a completed download against the server now (conditional request)."
        static func discussion(_ group: String) -> String {
            examples("reachctl \(group) refresh 3f2a9c01d4e8b7a6", "reachctl --json \(group) refresh 3f2a9c01d4e8b7a6")
        }
    }
}

/// list, clean: an operation whose answer is jobs, printed a line each or as a JSON array.
struct JobsVerb<Group: JobGroup, Verb: SharedJobVerb>: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: Verb.operation.rawValue, abstract: Verb.abstract, discussion: Verb.discussion(Group.name))
    }

    @OptionGroup var transfers: TransferOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup(visibility: .private) var unused: ConnectionOptions

    func validate() throws { try unused.refuse() }

    func run() throws {
        let client = transfers.connect()
        let (jobs, notice) = transferCall { () throws(ClientError) in try client.jobsAndNotice(TransferRequest(op: Verb.operation)) }
        // On standard error: what reads the list (a script, --json) gets the jobs alone.
        if let notice { writeAll(2, "reachctl: warning: \(notice.terminalSafe)\n") }
        if output.json { return printLine(jobsJSON(jobs)) }
        for job in jobs { printLine(humanLine(job)) }
    }
}

/// What a verb on one job takes: the instance, --json, the job id.
struct JobArguments: ParsableArguments {
    @OptionGroup var transfers: TransferOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup(visibility: .private) var unused: ConnectionOptions
    @Argument(help: "Job id.", completion: JobIDCompletion.kind) var id: String

    func validate() throws { try unused.refuse() }
}

/// show, pause, resume, cancel, refresh, remove: one job id, one job printed.
struct JobVerb<Group: JobGroup, Verb: SharedJobVerb>: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: Verb.operation.rawValue, abstract: Verb.abstract, discussion: Verb.discussion(Group.name))
    }

    @OptionGroup var job: JobArguments

    func run() throws {
        let client = job.transfers.connect()
        let answer = transferCall { () throws(ClientError) in try client.job(TransferRequest(op: Verb.operation, job: job.id)) }
        printLine(job.output.json ? answer.json : humanLine(answer))
    }
}

/// wait: follows one job until it ends.
struct WaitJob<Group: JobGroup>: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "wait",
            abstract: "Follow a job until it ends: a progress bar on a terminal, lines otherwise.",
            discussion: "Exit 0 when completed, 1 when failed, cancelled or timed out, 2 on errors.\n\n"
                + examples("reachctl \(Group.name) wait 3f2a9c01d4e8b7a6", "reachctl \(Group.name) wait 3f2a9c01d4e8b7a6 --timeout 3600 --json")
        )
    }

    @OptionGroup var job: JobArguments
    @Option(help: "Give up after this many seconds (default: wait forever).") var timeout: Double?

    func validate() throws {
        if let timeout, !(timeout >= 0) { throw ValidationError("--timeout must be a number of seconds >= 0") }
    }

    func run() throws {
        let json = job.output.json, id = job.id
        let client = job.transfers.connect()
        let jobs = transferCall { () throws(ClientError) in try client.jobs(TransferRequest(op: .watch, job: id)) }
        guard var current = jobs.first else { fail("no job \(id)") }
        let deadline = timeout.map { MonotonicClock.seconds() + $0 }
        var progress = ProgressDisplay(terminal: isatty(1) == 1 && !json)
        while true {
            if json { printLine(current.json) } else { progress.show(current) }
            if current.state.isTerminal { break }
            let left = deadline.map { $0 - MonotonicClock.seconds() }
            if let left, left <= 0 { break }
            guard let next = transferCall({ () throws(ClientError) in try client.nextEvent(timeout: left) }) else { break }
            current = next
        }
        progress.finish()
        if current.state == .completed { return }
        if !current.state.isTerminal {
            writeAll(2, "reachctl: timed out after \(timeout ?? 0)s; job \(current.id.terminalSafe) is \(current.state.rawValue)\n")
        } else if let reason = current.reason {
            writeAll(2, "reachctl: job \(current.id): \(reason)".terminalSafe + "\n")
        }
        throw ExitCode(1)
    }
}
