import ArgumentParser
import ReachdClient
import ReachdModel
import ReachdProtocol
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

@main
struct Reachctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reachctl",
        abstract: "Ask reachd whether the network is reachable, and over what kind of link.",
        discussion: """
            Exit status: 0 reachable (or condition met), 1 not reachable (or timed out), 2 error, 64 usage error. \
            --socket, --json, --system and --transfers-socket may come before the verb or after it.


            """ + examples(
                "reachctl status --host mirror.example",
                "reachctl wait --unmetered --timeout 600 && run-backup",
                "reachctl download add https://mirror.example/big.iso --output big.iso"
            ),
        version: PackageVersion.current,
        subcommands: [Status.self, Watch.self, Wait.self, Ping.self, Download.self, Upload.self, Fetch.self]
    )

    // The options the verbs share, here too so that they may come before the verb (`reachctl --json status`), as
    // systemctl's do; parsed here wherever they stand, and handed to each verb's group of the same type.
    @OptionGroup(title: "Options of status, watch, wait and ping") var connection: ConnectionOptions
    @OptionGroup(title: "Options of download, upload and fetch") var transfers: TransferOptions
    @OptionGroup(title: "Output") var output: OutputOptions
}

/// The options of the verbs that ask reachd (status, watch, wait, ping).
struct ConnectionOptions: ParsableArguments {
    @Option(help: "reachd's socket. Default: $REACHD_SOCKET, else /run/reachd/reachd.sock if present, else $XDG_RUNTIME_DIR/reachd.sock.",
            completion: .file())
    var socket: String?

    /// Refuses --socket for a verb that does not ask reachd (the root takes it anywhere on the line).
    func refuse() throws {
        if socket != nil {
            throw ValidationError("--socket is reachd's socket (status, watch, wait, ping); for reachd-transfers pass --transfers-socket PATH")
        }
    }

    /// reachd's socket: the option, else the environment's or the system's; fails when there is none.
    func path() -> String {
        let keys: [String] = ["REACHD_SOCKET", "XDG_RUNTIME_DIR"]
        var environment: [String: String] = [:]
        for key in keys {
            if let value = getenv(key) { environment[key] = String(cString: value) }
        }
        guard let path = SocketPath.clientPath(explicit: socket, uid: getuid(), environment: environment, exists: { access($0, F_OK) == 0 }) else {
            fail("reachd is not running (no /run/reachd/reachd.sock, and no XDG_RUNTIME_DIR for your own): "
                + "start it with \"systemctl start reachd.socket\", or pass --socket PATH")
        }
        return path
    }

    func connect() throws -> ReachdConnection {
        do {
            return try ReachdConnection(path: path())
        } catch {
            fail(error.explained)
        }
    }
}

/// --json, for every verb that can print JSON.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON: one object per verdict or job (download list and clean: an array).") var json = false

    /// Refuses --json for a verb that prints no JSON (the root takes it anywhere on the line).
    func refuse(_ verb: String) throws {
        if json { throw ValidationError("\(verb) prints no JSON; --json is for status, watch and the download, upload and fetch verbs") }
    }
}

/// A daemon's error for the user: the cause and the fix.
func explained(_ error: any Error) -> String {
    (error as? ClientError)?.explained ?? "\(error)"
}

/// A help text's closing examples, one command line each.
func examples(_ lines: String...) -> String {
    "Examples:\n" + lines.map { "  " + $0 }.joined(separator: "\n")
}

/// Prints `message` (terminal-safe: it may quote the daemons' words) on stderr and exits with 2 (an error, not a verdict).
func fail(_ message: String) -> Never {
    writeAll(2, "reachctl: \(message.terminalSafe)\n")
    Reachctl.exit(withError: ExitCode(2))
}

/// Writes a line to stdout unbuffered, so `watch` output reaches pipes at once.
func printLine(_ text: String) {
    writeAll(1, text + "\n")
}

func jsonLine(_ verdict: StampedVerdict) -> String { verdict.json }

/// The verdict for people, terminal-safe (host names, interface names and reasons come from the daemon).
func humanLine(_ verdict: StampedVerdict, withTime: Bool) -> String {
    let target = verdict.verdict.target == "internet" ? "" : "\(verdict.verdict.target): "
    return (withTime ? "\(verdict.timestamp) #\(verdict.sequence) \(target)\(verdict.verdict.summary)" : target + verdict.verdict.summary).terminalSafe
}

extension Reachctl {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the current verdict; exit 0 when reachable, 1 when not.",
            discussion: examples("reachctl status", "reachctl --json status --host mirror.example", "reachctl status --dbus system")
        )

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup(visibility: .private) var unused: TransferOptions
        @Option(help: "Judge the route to this host (a name or an address) instead of the default route.") var host: String?
        @Option(help: "Read the internet verdict from reachd's D-Bus properties on this bus (system or session) instead of the socket.",
                completion: .list(["system", "session"]))
        var dbus: String?

        private var json: Bool { output.json }

        func validate() throws {
            try unused.refuse()
            if let dbus, dbus != "system" && dbus != "session" { throw ValidationError("--dbus must be system or session") }
            if dbus != nil && (host != nil || json) { throw ValidationError("--dbus reads the internet verdict only, without --host or --json") }
        }

        func run() throws {
            if let dbus {
                let verdict: Verdict
                do {
                    verdict = try BusStatus.read(system: dbus == "system")
                } catch {
                    fail("\(error)")
                }
                printLine(verdict.summary.terminalSafe)
                throw ExitCode(verdict.reachable ? 0 : 1)
            }
            let client = try connection.connect()
            let verdict: StampedVerdict
            do {
                verdict = try client.verdict(for: Request(op: .status, hosts: host.map { [$0] } ?? []), timeout: 30)
            } catch {
                fail(explained(error))
            }
            printLine(json ? jsonLine(verdict) : humanLine(verdict, withTime: false))
            throw ExitCode(verdict.verdict.reachable ? 0 : 1)
        }
    }

    struct Watch: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the current verdict, then one line per change, until interrupted.",
            discussion: examples("reachctl watch", "reachctl watch --json --host a.example --host b.example")
        )

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup(visibility: .private) var unused: TransferOptions
        @Option(help: "Watch the route to this host instead of the default route (repeatable).") var host: [String] = []

        private var json: Bool { output.json }

        func validate() throws { try unused.refuse() }

        func run() throws {
            let json = json
            let handlers = SubscribeReader.Handlers(
                verdicts: { verdicts in
                    for verdict in verdicts { printLine(json ? jsonLine(verdict) : humanLine(verdict, withTime: true)) }
                },
                unreachable: { _ in }
            )
            do {
                let reader = try SubscribeReader.open(path: connection.path(), hosts: host, retry: .never, timeout: 30, handlers: handlers)
                // Until reachd closes the connection, refuses, or fails: then its word.
                if let error = reader.waitUntilStopped() { fail(explained(error)) }
            } catch {
                fail(explained(error))
            }
        }
    }

    struct Wait: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Wait until the network is reachable (and unmetered with --unmetered, within its data budget with --within-budget, not roaming with --not-roaming).",
            discussion: "Exit 0 as soon as the condition holds, 1 on timeout, 2 on errors. Usable as ExecCondition= in systemd units.\n\n"
                + examples(
                    "reachctl wait --timeout 60",
                    "reachctl wait --host backup.example --unmetered --timeout 600 && run-big-backup",
                    "reachctl wait --not-roaming --within-budget --timeout 3600 && sync-photos",
                    "ExecCondition=/usr/bin/reachctl wait --unmetered --timeout 60"
                )
        )

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup(visibility: .private) var unusedTransfers: TransferOptions
        @OptionGroup(visibility: .private) var unusedOutput: OutputOptions
        @Option(help: "Wait for the route to this host instead of the default route.") var host: String?
        @Flag(help: "Also require an unmetered link.") var unmetered = false
        @Flag(help: "Also require that the path's data budget ([[budget]] in reachd.toml) is not over.") var withinBudget = false
        @Flag(help: "Also require that the path's link is not a modem roaming on a visited network (from ModemManager).") var notRoaming = false
        @Option(help: "Give up after this many seconds (default: wait forever).") var timeout: Double?

        func validate() throws {
            try unusedTransfers.refuse()
            try unusedOutput.refuse("wait")
            if let timeout, !(timeout >= 0) { throw ValidationError("--timeout must be a number of seconds >= 0") }
        }

        func run() throws {
            let client = try connection.connect()
            let deadline = timeout.map { MonotonicClock.seconds() + $0 }
            do {
                var verdict = try client.verdict(for: Request(op: .subscribe, hosts: host.map { [$0] } ?? []), timeout: max(timeout ?? 30, 1))
                while !satisfies(verdict.verdict) {
                    let left = deadline.map { $0 - MonotonicClock.seconds() }
                    if let left, left <= 0 { timedOut(verdict) }
                    guard let next = try client.nextReply(timeout: left) else { timedOut(verdict) }
                    guard case .event(let changed) = next else { continue }
                    verdict = changed
                }
                printLine(verdict.verdict.summary.terminalSafe)
            } catch {
                fail(explained(error))
            }
        }

        private func satisfies(_ verdict: Verdict) -> Bool {
            verdict.reachable && !(unmetered && verdict.metered) && !(withinBudget && verdict.budget?.state == .over)
                && !(notRoaming && verdict.roaming)
        }

        private func timedOut(_ last: StampedVerdict) -> Never {
            writeAll(2, "reachctl: timed out after \(timeout ?? 0)s; \(last.verdict.summary.terminalSafe)\n")
            Reachctl.exit(withError: ExitCode(1))
        }
    }

    struct Ping: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that reachd answers.",
            discussion: examples("reachctl ping", "reachctl --socket /run/reachd/reachd.sock ping")
        )

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup(visibility: .private) var unusedTransfers: TransferOptions
        @OptionGroup(visibility: .private) var unusedOutput: OutputOptions

        func validate() throws {
            try unusedTransfers.refuse()
            try unusedOutput.refuse("ping")
        }

        func run() throws {
            let client = try connection.connect()
            do {
                try client.send(Request(op: .ping))
                guard case .pong? = try client.nextReply(timeout: 10) else { fail("no pong from reachd") }
                printLine("pong")
            } catch {
                fail(explained(error))
            }
        }
    }
}

/// Writes all of `text` to a descriptor (stdout 1, stderr 2).
func writeAll(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let n = bytes.withUnsafeBytes { pending in try? SystemCall.retrying("write") { write(fd, pending.baseAddress, pending.count) } }
        guard let n, n > 0 else { return }
        bytes = bytes.dropFirst(n)
    }
}
