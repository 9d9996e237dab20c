import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// Where credentials come from: one netrc file (the configured one, or a per-user instance's own
/// `~/.netrc`), read for every request and never kept.
struct CredentialSource: Sendable {
    let netrcPath: String?
    let files: UserFiles

    func credentials(for url: String) async -> Credentials? {
        guard let netrcPath, let host = try? TransferURL(url).host else { return nil }
        return (try? await files.read(netrcPath)).flatMap { Netrc($0).credentials(for: host) }
    }

    /// A proxy's credentials: its host's own entry only (never `default`, which is for servers).
    func credentials(forHost host: String) async -> Credentials? {
        guard let netrcPath else { return nil }
        return (try? await files.read(netrcPath)).flatMap { Netrc($0).credentials(forMachine: host) }
    }

    /// `$HOME/.netrc` of the daemon's user (`HOME`, else the user database).
    static var ownNetrc: String? {
        if let home = getenv("HOME").map({ String(cString: $0) }), home.hasPrefix("/") { return home + "/.netrc" }
        return getpwuid(geteuid()).map { String(cString: $0.pointee.pw_dir) + "/.netrc" }
    }
}
