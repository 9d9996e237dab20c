import AsyncHTTPClient
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// HTTP for the transfer service, with async-http-client: one attempt at a download (`Fetcher+Download`), at an
/// upload (`Fetcher+Upload`), a GET for the offline cache (`Fetcher+CacheFill`). This file is the transport: the
/// clients, the one path every request takes (where credentials are added by `CredentialRule`), and a failed
/// request as the job's outcome. Requests with credentials or a body use the client that follows no redirects.
/// Every request has a connection of its own (`Connection: close`): a pooled connection may belong to a route that
/// is gone since (it would hang until the read timeout).
final class Fetcher: Sendable {
    let client: HTTPClient
    let clientWithoutRedirects: HTTPClient
    let logger: Logger
    /// The socket's receive buffer: bounds the bytes in flight (also lost by a crash) without limiting
    /// speed on fast links (the kernel would otherwise grow it to several MiB).
    static let receiveBufferBytes = 128 << 10
    /// Progress goes to the scheduler every this many bytes (and at the end): each report is a hop to its actor,
    /// and watchers see progress at most every 0.25 s anyway.
    static let progressBytes: Int64 = 1 << 20

    /// `caFile`: PEM certificates trusted besides the system's; `readTimeout`: seconds a server may stay silent.
    init(caFile: String?, readTimeout: Double, logger: Logger) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .follow(max: 5, allowCycles: false),
            timeout: .init(connect: .seconds(10), read: .milliseconds(Int64(readTimeout * 1000))),
            decompression: .disabled
        )
        configuration.httpVersion = .http1Only
        configuration.http1_1ConnectionDebugInitializer = { channel in
            channel.setOption(ChannelOptions.socketOption(.so_rcvbuf), value: SocketOptionValue(Self.receiveBufferBytes)).flatMap {
                // Reads as large as the buffer: fewer, bigger chunks through the body stream.
                channel.setOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(
                    minimum: 4096, initial: 64 << 10, maximum: Self.receiveBufferBytes * 2))
            }
        }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        configuration.redirectConfiguration = .disallow
        clientWithoutRedirects = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.logger = logger
    }

    func shutdown() async {
        try? await client.shutdown()
        try? await clientWithoutRedirects.shutdown()
    }

    /// The size from a HEAD request, nil when the server does not say (or the request fails). Sent like
    /// every other request, so credentials go only where `send` lets them.
    func size(of url: String, credentials: Credentials?, allowInsecureAuth: Bool) async -> Int64? {
        let request = Self.request(url, method: .HEAD)
        guard case .success(let response) = await send(request, credentials: credentials, allowInsecureAuth: allowInsecureAuth,
                                                       deadline: .now() + .seconds(30)),
              response.status == .ok else { return nil }
        return contentLength(response.headers.first(name: "Content-Length"))
    }

    /// Every request is made here with `RequestFields.common` and sent through `send`, which alone adds
    /// credentials: one path for the rule of where they may go.
    static func request(_ url: String, method: HTTPMethod = .GET) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for field in RequestFields.common { request.headers.add(name: field.name, value: field.value) }
        return request
    }

    /// Sends `request` (with the credentials where `CredentialRule` lets them go); a failure is the job's outcome.
    /// Redirects are followed only where `CredentialRule.followsRedirects` allows.
    func send(_ request: HTTPClientRequest, credentials: Credentials?, allowInsecureAuth: Bool,
              deadline: NIODeadline = .distantFuture) async -> Result<HTTPClientResponse, OutcomeError> {
        let sent: HTTPClientRequest
        switch authorized(request, credentials: credentials, allowInsecureAuth: allowInsecureAuth) {
        case .failure(let error): return .failure(error)
        case .success(let withCredentials): sent = withCredentials
        }
        let follows = CredentialRule.followsRedirects(credentials: credentials, hasBody: request.body != nil)
        do {
            return .success(try await (follows ? client : clientWithoutRedirects).execute(sent, deadline: deadline))
        } catch {
            return .failure(Self.failure(of: error))
        }
    }

    /// `request` with the credentials' `Authorization` if `CredentialRule` lets them go to its URL.
    func authorized(_ request: HTTPClientRequest, credentials: Credentials?,
                    allowInsecureAuth: Bool) -> Result<HTTPClientRequest, OutcomeError> {
        switch CredentialRule.decide(url: request.url, credentials: credentials, allowInsecureAuth: allowInsecureAuth) {
        case .none:
            return .success(request)
        case .refuse(let outcome):
            return .failure(OutcomeError(outcome))
        case .authorize(let value):
            var request = request
            request.headers.add(name: "Authorization", value: value)
            return .success(request)
        }
    }

    /// A failed send, as the job's outcome.
    struct OutcomeError: Error {
        let outcome: FetchOutcome
        init(_ outcome: FetchOutcome) { self.outcome = outcome }
    }

    /// A request that failed with `error`, as the job's outcome.
    static func failure(of error: any Error) -> OutcomeError {
        OutcomeError(transportFailure(error).outcome(cancelled: Task.isCancelled))
    }

    /// What kind of failure `error` is.
    private static func transportFailure(_ error: any Error) -> TransportFailure {
        switch error {
        case let error as HTTPClientError where error == .redirectLimitReached || error == .redirectCycleDetected: .redirectLimit
        case let error as NIOSSLError: .handshake("\(error)")
        case let error as BoringSSLError: .tls("\(error)")
        case let error as FileError: .file("\(error)")
        default: .network(describe(error))
        }
    }

    /// An error as a reason quotes it.
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        return String(describing: error)
    }
}
