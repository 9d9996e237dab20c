import ArgumentParser
import ReachdClient
import ReachdProtocol
import ReachdTransferClient
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
            return try TransferClient(path: path, daemon: daemon)
        } catch {
            fail(error.explained)
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

/// Runs one request, failing with exit status 2 and the service's message when it is refused.
func transferCall<T>(_ body: () throws(ClientError) -> T) -> T {
    do {
        return try body()
    } catch {
        fail(error.explained)
    }
}
