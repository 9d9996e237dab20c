/// What the desktop's proxy settings (GNOME's, KDE's, a PAC script) say for a job's URL, read from the answer of
/// xdg-desktop-portal's `org.freedesktop.portal.ProxyResolver.Lookup`: GLib's list of proxy URIs, in the order a
/// client tries them.
public enum DesktopProxy: Hashable, Sendable {
    /// `direct://`: straight to the server.
    case direct
    case proxy(ProxyServer)
    /// The answer names no proxy that can be used; why, naming the entries' schemes (never their text: it may hold
    /// a password).
    case unusable(String)

    /// Entries read from an answer, and the longest one read; a portal's answer beyond them is not looked at.
    public static let maximumEntries = 16
    public static let maximumEntryBytes = 2048

    /// The first entry that can be used: `direct://`, `http://`, or SOCKS5. GLib's `socks://` (SOCKS5, then 4a, then
    /// 4) and `socks5://` send the host name to the proxy, which `socks5h` does.
    public init(answer: [String]) {
        var refused: [String] = []
        for entry in answer.prefix(Self.maximumEntries) {
            guard entry.utf8.count <= Self.maximumEntryBytes else {
                refused.append("an entry longer than \(Self.maximumEntryBytes) bytes")
                continue
            }
            let scheme = entry.prefix { $0.isASCII && ($0.isLetter || $0.isNumber) }.lowercased()
            let rest = entry.dropFirst(scheme.count)
            guard (1...16).contains(scheme.count), rest.hasPrefix("://") else {
                refused.append("an entry that is not a URI")
                continue
            }
            if scheme == "direct" {
                self = .direct
                return
            }
            let named = scheme == "socks" || scheme == "socks5" ? "socks5h" + rest : entry
            do {
                self = .proxy(try ProxyServer(named))
                return
            } catch {
                refused.append("\(scheme)://")
            }
        }
        self = .unusable(refused.isEmpty ? "it named none" : "it named only \(refused.joined(separator: ", "))")
    }

    /// The proxy requests go through; nil: straight to the server (or, `unusable`, nowhere).
    public var server: ProxyServer? {
        if case .proxy(let server) = self { server } else { nil }
    }
}
