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

    /// The job's outcome; `cancelled`: the task is being stopped (a network error is then the stop itself).
    public func outcome(cancelled: Bool) -> FetchOutcome {
        switch self {
        case .redirectLimit: .failed(reason: "failed: more than 5 redirects, or a redirect loop")
        case .handshake(let error): .failed(reason: "failed: TLS: \(error) (a certificate the system does not trust? [downloads] ca_file adds a CA)")
        case .tls(let error): .failed(reason: "failed: TLS: \(error)")
        case .file(let error): .failed(reason: "failed: \(error)")
        case .network(let error): cancelled ? .stopped : .retry(reason: "network error: \(error)", retryAfter: nil)
        }
    }
}
