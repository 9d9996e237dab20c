import ArgumentParser
import ReachdClient
import ReachdModel
import ReachdProtocol
import ReachdSystem
import ReachdTransferModel
import ReachdTransferProtocol
#if canImport(Glibc)
import Glibc
#endif

extension Reachctl {
    struct Fetch: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Get a URL through reachd-transfers' offline cache: from the network when the route allows, else the cached copy.",
            discussion: """
                Says on stderr when (and why) the cached copy was used and how old it is; --json prints the metadata (source, \
                reason, age, status, size) as one JSON line on stderr. Exit 0 with a body, 1 when neither the network nor the \
                cache has one, 2 on errors.


                """ + examples("reachctl fetch https://example.org/feed.xml > feed.xml", "reachctl fetch https://example.org/feed.xml --output feed.xml --json")
        )

        @OptionGroup var transfers: TransferOptions
        @OptionGroup var printing: OutputOptions
        @OptionGroup(visibility: .private) var unused: ConnectionOptions
        @Argument(help: "http:// or https:// URL.") var url: String
        @Option(help: "Where the body goes; - (the default) is standard output.", completion: .file()) var output: String = "-"
        @OptionGroup(title: "Proxy") var proxy: ProxyOption

        /// --json: the metadata (source, reason, age, status, size) as one JSON line on stderr.
        private var json: Bool { printing.json }

        func validate() throws { try unused.refuse() }

        func run() throws {
            var request = TransferRequest(op: .fetch, fetch: url)
            request.fetchProxy = try proxy.asked(for: url)
            let client = transfers.connect()
            let reply: TransferReply
            do {
                reply = try client.call(request, timeout: 300)
            } catch {
                if case .refused(let refusal) = error.failure, refusal.code == .unavailable {
                    writeAll(2, "reachctl: \(refusal.message.terminalSafe)\n")
                    throw ExitCode(1)
                }
                fail(error.explained)
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
                let read = buffer.withUnsafeMutableBytes { space in SystemCall.result("read") { Glibc.read(input, space.baseAddress, space.count) } }
                guard let n = try? read.get(), n > 0 else { break }
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
