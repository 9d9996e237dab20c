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
    /// Straight to the server.
    let direct: ClientPair
    /// Plain http forwarded by an http proxy (`Fetcher+Proxy`): requests go to the proxy with absolute-form targets.
    /// Neither follows redirects: `send` does, so that each hop goes the way its URL goes.
    let forwarding: ClientPair
    /// Tunnels through proxies, per proxy in use.
    let tunnels: TunnelClients
    /// Makes the clients of one way out (through `proxy`, forwarding or not); `connected` is told each connection.
    let makeClients: @Sendable (HTTPClient.Configuration.Proxy?, Bool, (@Sendable (any Channel) -> Void)?) -> ClientPair
    let logger: Logger
    /// Seconds a server may stay silent (`[downloads] read_timeout_seconds`).
    let readTimeout: Double
    /// The socket's receive buffer: bounds the bytes in flight (also lost by a crash) without limiting
    /// speed on fast links (the kernel would otherwise grow it to several MiB).
    static let receiveBufferBytes = 128 << 10
    /// Progress goes to the scheduler every this many bytes (and at the end): each report is a hop to its actor,
    /// and watchers see progress at most every 0.25 s anyway.
    static let progressBytes: Int64 = 1 << 20

    /// `caFile`: PEM certificates trusted besides the system's; `readTimeout`: seconds a server may stay silent.
    init(caFile: String?, readTimeout: Double, logger: Logger) {
        let pair: @Sendable (HTTPClient.Configuration.Proxy?, Bool, (@Sendable (any Channel) -> Void)?) -> ClientPair = { proxy, forwards, connected in
            func client(follows: Bool) -> HTTPClient {
                HTTPClient(eventLoopGroupProvider: .singleton, configuration: Self.configuration(
                    caFile: caFile, readTimeout: readTimeout, proxy: proxy, forwards: forwards, follows: follows, connected: connected))
            }
            return ClientPair(following: client(follows: !forwards), notFollowing: client(follows: false))
        }
        makeClients = pair
        self.readTimeout = readTimeout
        direct = pair(nil, false, nil)
        forwarding = pair(nil, true, nil)
        tunnels = TunnelClients { server, credentials in pair(Self.tunnelProxy(server, credentials: credentials), false, nil) }
        self.logger = logger
    }

    private static func configuration(caFile: String?, readTimeout: Double, proxy: HTTPClient.Configuration.Proxy?, forwards: Bool,
                                      follows: Bool, connected: (@Sendable (any Channel) -> Void)?) -> HTTPClient.Configuration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: follows ? .follow(max: 5, allowCycles: false) : .disallow,
            timeout: .init(connect: .seconds(10), read: .milliseconds(Int64(readTimeout * 1000))),
            proxy: proxy,
            decompression: .disabled
        )
        configuration.httpVersion = .http1Only
        configuration.http1_1ConnectionDebugInitializer = { channel in
            channel.setOption(ChannelOptions.socketOption(.so_rcvbuf), value: SocketOptionValue(Self.receiveBufferBytes)).flatMap {
                // Reads as large as the buffer: fewer, bigger chunks through the body stream.
                channel.setOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(
                    minimum: 4096, initial: 64 << 10, maximum: Self.receiveBufferBytes * 2))
            }.flatMap {
                connected?(channel)
                return forwards ? AbsoluteFormTarget.install(on: channel) : channel.eventLoop.makeSucceededVoidFuture()
            }
        }
        return configuration
    }

    func shutdown() async {
        await direct.shutdown()
        await forwarding.shutdown()
        await tunnels.shutdown()
    }

    /// The size from a HEAD request, nil when the server does not say (or the request fails). Sent like
    /// every other request, so credentials go only where `send` lets them.
    func size(of url: String, credentials: Credentials?, allowInsecureAuth: Bool, via lease: ProxyLease) async -> Int64? {
        let request = Self.request(url, method: .HEAD)
        guard case .success(let response) = await send(request, credentials: credentials, allowInsecureAuth: allowInsecureAuth,
                                                       via: lease, deadline: .now() + .seconds(30)),
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

    /// Sends `request` (with the credentials where `CredentialRule` lets them go) the way its URL goes under `lease`;
    /// a failure is the job's outcome. Redirects are followed only where `CredentialRule.followsRedirects` allows: by
    /// async-http-client when no proxy is in play, else here, each hop the way its own URL goes (a target that is
    /// not a URL a job could have ends the redirects: its answer is the request's).
    func send(_ request: HTTPClientRequest, credentials: Credentials?, allowInsecureAuth: Bool, via lease: ProxyLease,
              deadline: NIODeadline = .distantFuture) async -> Result<HTTPClientResponse, OutcomeError> {
        var sent: HTTPClientRequest
        switch authorized(request, credentials: credentials, allowInsecureAuth: allowInsecureAuth) {
        case .failure(let error): return .failure(error)
        case .success(let withCredentials): sent = withCredentials
        }
        let follows = CredentialRule.followsRedirects(credentials: credentials, hasBody: request.body != nil)
        if let refusal = lease.refusal { return .failure(OutcomeError(refusal)) }
        // With a proxy in play (or the desktop's settings deciding), async-http-client follows nothing: it would take every
        // hop the first one's way.
        let followsHere = follows && (!lease.routes.isEmpty || lease.desktopLookup != nil)
        var visited = [sent.url]
        while true {
            let way = way(for: sent.url, under: lease)
            if way.route != nil, credentials != nil, !lease.plainCredentialsThroughOwnProxy, !sent.url.lowercased().hasPrefix("https:") {
                return .failure(OutcomeError(.failed(reason: "failed: the netrc's credentials for this server do not go readable "
                    + "through a proxy the job names (the system instance's netrc is lent, not given); use https")))
            }
            let response: HTTPClientResponse
            do {
                response = try await (follows && !followsHere ? way.clients.following : way.clients.notFollowing)
                    .execute(Self.prepared(sent, for: way), deadline: deadline)
            } catch {
                return .failure(Self.failure(of: error, via: way.route))
            }
            if let route = way.route, way.forwards, ProxyAnswer.refusesCredentials(status: Int(response.status.code)) {
                return .failure(OutcomeError(TransportFailure.proxyCredentials(proxy: route.name, sent: route.credentials != nil)
                    .outcome(cancelled: false)))
            }
            guard followsHere,
                  let target = Redirect.target(status: Int(response.status.code), location: response.headers.first(name: "Location"),
                                               from: sent.url) else { return .success(response) }
            guard visited.count <= 5, !visited.contains(target) else {
                return .failure(OutcomeError(TransportFailure.redirectLimit.outcome(cancelled: false)))
            }
            if let refusal = await Self.desktopRefusal(of: target, from: visited[0], under: lease) {
                return .failure(OutcomeError(refusal))
            }
            visited.append(target)
            sent.url = target
            if response.status == .seeOther, sent.method != .HEAD { sent.method = .GET }
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

    /// A request that failed with `error`, as the job's outcome; `route`: the proxy it went through.
    static func failure(of error: any Error, via route: ProxyLease.Route? = nil) -> OutcomeError {
        OutcomeError(transportFailure(error, via: route).outcome(cancelled: Task.isCancelled))
    }

    /// What kind of failure `error` is.
    private static func transportFailure(_ error: any Error, via route: ProxyLease.Route?) -> TransportFailure {
        if let route {
            switch error {
            case let error as HTTPClientError where error == .proxyAuthenticationRequired:
                return .proxyCredentials(proxy: route.name, sent: route.credentials != nil)
            case let error as HTTPClientError where error == .invalidProxyResponse:
                return .proxyRefused(proxy: route.name, detail: "it would not open a tunnel to the server")
            case let error as HTTPClientError where error == .socksHandshakeTimeout:
                return .proxyRefused(proxy: route.name, detail: "no SOCKS5 handshake within the connect timeout")
            case is HTTPClientError, is NIOSSLError, is BoringSSLError, is FileError: break
            default: return .network("through the proxy \(route.name): \(describe(error))")
            }
        }
        return switch error {
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
