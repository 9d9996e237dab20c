/// Why a request got no usable answer, sorted from the error the HTTP client, TLS or a file threw.
public enum TransportFailure: Hashable, Sendable {
    /// More than 5 redirects, or a redirect loop.
    case redirectLimit
    /// NIOSSL failed the connection, most often in the handshake: a certificate the system does not trust.
    case handshake(String)
    /// A TLS error from BoringSSL.
    case tls(String)
    /// A file could not be read or written.
    case file(String)
    /// Anything else: the network.
    case network(String)
    /// The proxy (named without credentials) answered 407: it wants credentials, or refused the ones sent.
    case proxyCredentials(proxy: String, sent: Bool)
    /// The proxy refused to open the tunnel or to forward the request (`detail` says how).
    case proxyRefused(proxy: String, detail: String)

    /// The job's outcome; `cancelled`: the task is being stopped (a network error is then the stop itself).
    public func outcome(cancelled: Bool) -> FetchOutcome {
        switch self {
        case .redirectLimit: .failed(reason: "failed: more than 5 redirects, or a redirect loop")
        case .handshake(let error): .failed(reason: "failed: TLS: \(error) (a certificate the system does not trust? [downloads] ca_file adds a CA)")
        case .tls(let error): .failed(reason: "failed: TLS: \(error)")
        case .file(let error): .failed(reason: "failed: \(error)")
        case .network(let error): cancelled ? .stopped : .retry(reason: "network error: \(error)", retryAfter: nil)
        case .proxyCredentials(let proxy, true):
            .retry(reason: "the proxy \(proxy) refused the credentials (407 Proxy Authentication Required)", retryAfter: nil)
        case .proxyCredentials(let proxy, false):
            .retry(reason: "the proxy \(proxy) asks for credentials (407 Proxy Authentication Required): give them in the proxy URL, "
                + "or in a netrc entry for its host", retryAfter: nil)
        case .proxyRefused(let proxy, let detail): .retry(reason: "the proxy \(proxy) refused: \(detail)", retryAfter: nil)
        }
    }
}
