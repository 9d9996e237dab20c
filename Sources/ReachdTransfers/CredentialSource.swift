import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// Where credentials come from: one configured netrc (read by the daemon) or each owner's `~/.netrc`
/// (read as the owner), looked up for every request and never kept.
struct CredentialSource: Sendable {
    let netrcPath: String?
    let files: UserFiles

    func credentials(for url: String, owner: Owner) async -> Credentials? {
        guard let host = try? TransferURL(url).host else { return nil }
        let text: String?
        if let netrcPath {
            text = try? await files.read(netrcPath, as: Owner(uid: geteuid(), gid: getegid()))
        } else if let home = getpwuid(owner.uid).map({ String(cString: $0.pointee.pw_dir) }) {
            text = try? await files.read(home + "/.netrc", as: owner)
        } else {
            text = nil
        }
        return text.flatMap { Netrc($0).credentials(for: host) }
    }
}
