import ArgumentParser
import ReachdClient
import ReachdModel
import ReachdProtocol
#if canImport(Glibc)
import Glibc
#endif

@main
struct Reachctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reachctl",
        abstract: "Ask reachd whether the network is reachable, and over what kind of link.",
        discussion: "Exit status: 0 reachable (or condition met), 1 not reachable (or timed out), 2 error.",
        version: PackageVersion.current,
        subcommands: [Status.self, Watch.self, Wait.self, Ping.self, Download.self, Upload.self, Fetch.self]
    )
}

/// Options every subcommand takes.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "reachd's socket. Default: $REACHD_SOCKET, else /run/reachd/reachd.sock if present, else $XDG_RUNTIME_DIR/reachd.sock.")
    var socket: String?

    func connect() throws -> ReachdConnection {
        let keys: [String] = ["REACHD_SOCKET", "XDG_RUNTIME_DIR"]
        var environment: [String: String] = [:]
        for key in keys {
            if let value = getenv(key) { environment[key] = String(cString: value) }
        }
        guard let path = SocketPath.clientPath(explicit: socket, uid: getuid(), environment: environment, exists: { access($0, F_OK) == 0 }) else {
            fail("no socket path: pass --socket PATH, or set REACHD_SOCKET or XDG_RUNTIME_DIR")
        }
        do {
            return try ReachdConnection(path: path)
        } catch {
            fail("\(error)")
        }
    }
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
        static let configuration = CommandConfiguration(abstract: "Print the current verdict; exit 0 when reachable, 1 when not.")

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Judge the route to this host (a name or an address) instead of the default route.") var host: String?
        @Flag(help: "Print one JSON object.") var json = false
        @Option(help: "Read the internet verdict from reachd's D-Bus properties on this bus (system or session) instead of the socket.")
        var dbus: String?

        func validate() throws {
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
                fail("\(error)")
            }
            printLine(json ? jsonLine(verdict) : humanLine(verdict, withTime: false))
            throw ExitCode(verdict.verdict.reachable ? 0 : 1)
        }
    }

    struct Watch: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the current verdict, then one line per change, until interrupted.")

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Watch the route to this host instead of the default route (repeatable).") var host: [String] = []
        @Flag(help: "Print JSON objects, one per line.") var json = false

        func run() throws {
            let client = try connection.connect()
            do {
                for verdict in try client.verdicts(for: Request(op: .subscribe, hosts: host), timeout: 30) {
                    printLine(json ? jsonLine(verdict) : humanLine(verdict, withTime: true))
                }
                while true {
                    let verdict = try client.verdict(forNextEvent: ())
                    printLine(json ? jsonLine(verdict) : humanLine(verdict, withTime: true))
                }
            } catch {
                fail("\(error)")
            }
        }
    }

    struct Wait: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Wait until the network is reachable (and unmetered with --unmetered).",
            discussion: "Exit 0 as soon as the condition holds, 1 on timeout, 2 on errors. Usable as ExecCondition= in systemd units."
        )

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Wait for the route to this host instead of the default route.") var host: String?
        @Flag(help: "Also require an unmetered link.") var unmetered = false
        @Option(help: "Give up after this many seconds (default: wait forever).") var timeout: Double?

        func validate() throws {
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
                fail("\(error)")
            }
        }

        private func satisfies(_ verdict: Verdict) -> Bool {
            verdict.reachable && !(unmetered && verdict.metered)
        }

        private func timedOut(_ last: StampedVerdict) -> Never {
            writeAll(2, "reachctl: timed out after \(timeout ?? 0)s; \(last.verdict.summary.terminalSafe)\n")
            Reachctl.exit(withError: ExitCode(1))
        }
    }

    struct Ping: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check that reachd answers.")

        @OptionGroup var connection: ConnectionOptions

        func run() throws {
            let client = try connection.connect()
            do {
                try client.send(Request(op: .ping))
                guard case .pong? = try client.nextReply(timeout: 10) else { fail("no pong from reachd") }
                printLine("pong")
            } catch {
                fail("\(error)")
            }
        }
    }
}

/// Writes all of `text` to a descriptor (stdout 1, stderr 2).
func writeAll(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return }
        bytes = bytes.dropFirst(n)
    }
}

extension ReachdConnection {
    /// Blocks until the next `event` and returns its verdict.
    func verdict(forNextEvent _: Void) throws(ClientError) -> StampedVerdict {
        while true {
            guard let reply = try nextReply() else { continue }
            switch reply {
            case .event(let verdict): return verdict
            case .error(let error): throw .refused(error)
            default: continue
            }
        }
    }
}
