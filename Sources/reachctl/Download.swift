import ArgumentParser
import ReachdClient
import ReachdTransferModel
import ReachdTransferProtocol

extension Reachctl {
    struct Download: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue downloads that wait for an unmetered route (served by reachd-transfers).",
            discussion: "Exit status: 0 done, 1 failed/cancelled/timed out (wait), 2 error.\n\n" + examples(
                "reachctl download add https://mirror.example/big.iso --output big.iso",
                "reachctl download wait 3f2a9c01d4e8b7a6",
                "reachctl --system download list"
            ),
            subcommands: [Add.self, JobsVerb<DownloadGroup, JobVerbs.List>.self, JobVerb<DownloadGroup, JobVerbs.Show>.self, JobVerb<DownloadGroup, JobVerbs.Pause>.self,
                          JobVerb<DownloadGroup, JobVerbs.Resume>.self, JobVerb<DownloadGroup, JobVerbs.Cancel>.self, JobVerb<DownloadGroup, JobVerbs.Refresh>.self,
                          JobVerb<DownloadGroup, JobVerbs.Remove>.self, JobsVerb<DownloadGroup, JobVerbs.Clean>.self, WaitJob<DownloadGroup>.self,
                          LimitJob<DownloadGroup>.self]
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
        @OptionGroup(title: "Proxy") var proxy: ProxyOption
        @OptionGroup var rate: RateOption

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
            spec.proxy = try proxy.asked(for: spec.url)
            spec.maxRate = rate.bytesPerSecond
            let client = transfers.connect()
            let job = transferCall { () throws(ClientError) in try client.job(TransferRequest(op: .add, download: spec)) }
            printLine(json ? job.json : job.id.terminalSafe)
        }
    }
}
