import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import ReachdTransferModel
import Synchronization

/// The two clients of one way out: one that follows redirects, one that follows none.
struct ClientPair: Sendable {
    let following: HTTPClient
    let notFollowing: HTTPClient

    func shutdown() async {
        try? await following.shutdown()
        try? await notFollowing.shutdown()
    }
}

/// The proxies one attempt (or one cache fetch) may use, with their credentials and, for tunnels (`CONNECT`, SOCKS),
/// clients of their own, held from `Fetcher.lease` until `Fetcher.release`.
struct ProxyLease: Sendable {
    struct Route: Sendable {
        /// The proxy as it is named to users: without credentials.
        let name: String
        let server: ProxyServer
        /// Sent to the proxy only: `Proxy-Authorization` on forwarded requests, on the `CONNECT` of tunnels.
        let credentials: Credentials?
        /// The tunnels' clients (https through an http proxy, anything through SOCKS).
        let tunnel: ClientPair
        /// Whether `tunnel` is the lease's own (a watched attempt's), not the fetcher's shared pair.
        var ownsTunnel = false
    }

    let proxies: JobProxy
    let routes: [ProxyServer: Route]
    /// Why no request may go, as the attempt's outcome (the job's own proxy no longer reads as one: it fails; the desktop's
    /// settings give none that can be used: it is tried again later); nil: they may.
    var refusal: FetchOutcome?
    /// For a job whose proxy the desktop's settings decide: asks them for a redirect's URL (nil: no answer).
    var desktopLookup: (@Sendable (String) async -> DesktopProxy?)?
    /// Clients of the attempt's own for requests that go straight to the server, and for plain http a proxy forwards
    /// (a yielding download's, whose connections it watches); nil: the fetcher's. Shut down by `Fetcher.release`.
    var direct: ClientPair?
    var forwarding: ClientPair?
    /// Whether the server's credentials may go readable (plain http, allowed by the job) through the job's own proxy:
    /// not on the system instance, whose netrc is lent to its clients, not given to them.
    var plainCredentialsThroughOwnProxy = true
}

/// Tunnels' clients, one pair per proxy (with its credentials) in use, shut down once no lease holds them.
final class TunnelClients: Sendable {
    private struct Held {
        var clients: ClientPair
        var leases: Int
    }

    private let held = Mutex<[ProxyServer: Held]>([:])
    private let make: @Sendable (ProxyServer, Credentials?) -> ClientPair

    init(make: @escaping @Sendable (ProxyServer, Credentials?) -> ClientPair) {
        self.make = make
    }

    /// `server`'s pair (with `credentials`), counted as held once more.
    func acquire(_ server: ProxyServer, credentials: Credentials?) -> ClientPair {
        var key = server
        (key.login, key.password) = Self.keyed(credentials)
        return held.withLock { held in
            if let entry = held[key] {
                held[key]?.leases += 1
                return entry.clients
            }
            let clients = make(server, credentials)
            held[key] = Held(clients: clients, leases: 1)
            return clients
        }
    }

    /// Ends one hold of `server`'s pair; the last one shuts it down.
    func release(_ server: ProxyServer, credentials: Credentials?) {
        var key = server
        (key.login, key.password) = Self.keyed(credentials)
        let unused: ClientPair? = held.withLock { held in
            guard let entry = held[key] else { return nil }
            guard entry.leases <= 1 else {
                held[key]?.leases -= 1
                return nil
            }
            held[key] = nil
            return entry.clients
        }
        if let unused { Task { await unused.shutdown() } }
    }

    func shutdown() async {
        let all = held.withLock { held in
            defer { held = [:] }
            return held.values.map(\.clients)
        }
        for clients in all { await clients.shutdown() }
    }

    private static func keyed(_ credentials: Credentials?) -> (String?, String?) {
        switch credentials {
        case .basic(let login, let password)?: (login, password)
        case .bearer(let token)?: ("\u{0}bearer", token)
        case nil: (nil, nil)
        }
    }
}

/// Rewrites a request's target to the absolute form (`http://host:port/path`, RFC 9112 §3.2.2) that a proxy forwarding
/// plain http expects, from its `Host` field: the connection goes to the proxy, the request names the origin.
final class AbsoluteFormTarget: ChannelOutboundHandler, RemovableChannelHandler, Sendable {
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data), head.uri.hasPrefix("/"), let host = head.headers.first(name: "Host") else {
            context.write(data, promise: promise)
            return
        }
        head.uri = "http://" + host + head.uri
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }

    /// Puts the rewriter between async-http-client's request encoder and its handler.
    static func install(on channel: any Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            let encoder = try pipeline.context(handlerType: HTTPRequestEncoder.self)
            try pipeline.addHandler(AbsoluteFormTarget(), position: .after(encoder.handler))
        }
    }
}

extension Fetcher {
    /// How one request leaves: the clients that send it, and the proxy it goes through (nil: straight to the server).
    struct Way {
        let clients: ClientPair
        let route: ProxyLease.Route?
        /// Plain http through an http proxy: sent to the proxy with an absolute-form target.
        let forwards: Bool
    }

    /// The proxies `proxies` may send a request through, with credentials (the proxy URL's, else `netrc`'s entry for the
    /// proxy's host: for the instance's proxies, and for a job's own only where `lendsNetrc`, i.e. a user's own
    /// instance, whose netrc is the user's) and tunnels' clients; release it with `release`. With `watching`, every
    /// client is the lease's own and tells it each connection it opens (to the server, or to the proxy).
    func lease(_ proxies: JobProxy, lendsNetrc: Bool, watching connected: (@Sendable (any Channel) -> Void)? = nil,
               netrc: (String) async -> Credentials?) async -> ProxyLease {
        var servers: [ProxyServer] = []
        var refusal: FetchOutcome?
        if let asked = proxies.asked, asked != JobProxy.none {
            do { servers = [try ProxyServer(asked)] } catch { refusal = .failed(reason: "failed: the job's proxy cannot be used (\(error))") }
        } else if proxies.asked == nil, let instance = proxies.instance {
            servers = [instance.http, instance.https].compactMap { $0 }
        } else if proxies.asked == nil, let desktop = proxies.desktop {
            switch desktop {
            case .direct: break
            case .proxy(let server): servers = [server]
            case .unusable(let why): refusal = .retry(reason: "the desktop's proxy settings give no proxy that can be used (\(why))", retryAfter: nil)
            }
        }
        let ownProxy = proxies.asked != nil
        var routes: [ProxyServer: ProxyLease.Route] = [:]
        for server in servers where routes[server] == nil {
            let lent = server.login == nil && (!ownProxy || lendsNetrc) ? await netrc(server.host) : nil
            let credentials = server.kind.isSOCKS ? nil : server.credentials(or: lent)
            routes[server] = if let connected {
                ProxyLease.Route(name: server.description, server: server, credentials: credentials,
                                 tunnel: makeClients(Self.tunnelProxy(server, credentials: credentials), false, connected), ownsTunnel: true)
            } else {
                ProxyLease.Route(name: server.description, server: server, credentials: credentials,
                                 tunnel: tunnels.acquire(server, credentials: credentials))
            }
        }
        var lease = ProxyLease(proxies: proxies, routes: routes, refusal: refusal)
        lease.plainCredentialsThroughOwnProxy = !ownProxy || lendsNetrc
        if let connected {
            lease.direct = makeClients(nil, false, connected)
            if routes.keys.contains(where: { $0.kind == .http }) { lease.forwarding = makeClients(nil, true, connected) }
        }
        return lease
    }

    func release(_ lease: ProxyLease) {
        var own = [lease.direct, lease.forwarding].compactMap { $0 }
        for route in lease.routes.values {
            if route.ownsTunnel { own.append(route.tunnel) } else { tunnels.release(route.server, credentials: route.credentials) }
        }
        if !own.isEmpty { Task { for clients in own { await clients.shutdown() } } }
    }

    /// The way a request to `url` leaves under `lease`.
    func way(for url: String, under lease: ProxyLease) -> Way {
        guard let server = lease.proxies.proxy(for: url), let route = lease.routes[server] else {
            return Way(clients: lease.direct ?? direct, route: nil, forwards: false)
        }
        if server.kind == .http, url.lowercased().hasPrefix("http:") {
            return Way(clients: lease.forwarding ?? forwarding, route: route, forwards: true)
        }
        return Way(clients: route.tunnel, route: route, forwards: false)
    }

    /// `request` as `way` sends it: a forwarded one goes to the proxy, naming the origin in `Host` (which the
    /// target's rewriter reads) and carrying the proxy's credentials.
    static func prepared(_ request: HTTPClientRequest, for way: Way) -> HTTPClientRequest {
        guard way.forwards, let route = way.route, let origin = try? TransferURL(request.url) else { return request }
        var request = request
        let afterScheme = request.url[request.url.index(request.url.startIndex, offsetBy: 7)...]
        let pathAndQuery = afterScheme.drop { $0 != "/" && $0 != "?" }.prefix { $0 != "#" }
        let host = origin.host.contains(":") ? "[\(origin.host)]" : origin.host
        let proxyHost = route.server.host.contains(":") ? "[\(route.server.host)]" : route.server.host
        request.url = "http://\(proxyHost):\(route.server.port)" + (pathAndQuery.hasPrefix("/") ? "" : "/") + pathAndQuery
        request.headers.replaceOrAdd(name: "Host", value: host + (origin.port.map { ":\($0)" } ?? ""))
        if let credentials = route.credentials { request.headers.replaceOrAdd(name: "Proxy-Authorization", value: credentials.authorization) }
        return request
    }

    /// async-http-client's proxy for a tunnel through `server` with `credentials`.
    static func tunnelProxy(_ server: ProxyServer, credentials: Credentials?) -> HTTPClient.Configuration.Proxy {
        guard server.kind == .http else { return .socksServer(host: server.host, port: server.port) }
        let authorization: HTTPClient.Authorization? = switch credentials {
        case .basic(let login, let password)?: .basic(username: login, password: password)
        case .bearer(let token)?: .bearer(tokens: token)
        case nil: nil
        }
        return .server(host: server.host, port: server.port, authorization: authorization)
    }
}

extension Fetcher {
    /// Where the desktop's settings decide a job's proxy, a redirect to another host goes only the way the lease has
    /// (the same proxy, or straight): the settings are asked for its URL, and a hop they would send another way, or that
    /// they do not answer for, ends the attempt, to be tried again.
    static func desktopRefusal(of target: String, from first: String, under lease: ProxyLease) async -> FetchOutcome? {
        let host = (try? TransferURL(target))?.host
        guard let lookup = lease.desktopLookup, let desktop = lease.proxies.desktop, host != (try? TransferURL(first))?.host else { return nil }
        let answer = await lookup(target)
        guard let answer, answer.server == desktop.server, answer.server != nil || answer == .direct else {
            return .retry(reason: "redirected to \(host ?? "?"), which the desktop's proxy settings send another way: not followed", retryAfter: nil)
        }
        return nil
    }
}
