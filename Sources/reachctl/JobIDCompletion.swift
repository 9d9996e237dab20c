import ArgumentParser
import ReachdClient
import ReachdProtocol
import ReachdTransferClient
import ReachdTransferModel
import ReachdTransferProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Job ids for the shells' completion of `download show|pause|resume|… ID` (`reachctl ---completion …`, which the
/// generated scripts run): the jobs of the instance the command line names (--system, --transfers-socket, else the
/// default one), asked with a short timeout; none when it does not answer.
enum JobIDCompletion {
    static var kind: CompletionKind {
        .custom { arguments, _, prefix in ids(arguments: arguments, prefix: prefix) }
    }

    static func ids(arguments: [String], prefix: String) -> [String] {
        var explicit: String?
        if let index = arguments.firstIndex(of: "--transfers-socket"), index + 1 < arguments.count {
            explicit = arguments[index + 1]
        } else if let joined = arguments.first(where: { $0.hasPrefix("--transfers-socket=") }) {
            explicit = String(joined.dropFirst("--transfers-socket=".count))
        }
        var environment: [String: String] = [:]
        for key in ["REACHD_TRANSFERS_SOCKET", "XDG_RUNTIME_DIR"] {
            if let value = getenv(key) { environment[key] = String(cString: value) }
        }
        let system = arguments.contains("--system") || getuid() == 0
        guard let path = TransferSocketPath.clientPath(explicit: explicit, system: system, environment: environment),
              let client = try? TransferClient(path: path, daemon: .transfers(system: system)),
              let jobs = try? client.jobs(TransferRequest(op: .list), timeout: 2)
        else { return [] }
        // Only words a shell takes as they are: ids are hex, whatever a daemon sends.
        return jobs.map(\.id).filter { id in id.hasPrefix(prefix) && !id.isEmpty && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }
}
