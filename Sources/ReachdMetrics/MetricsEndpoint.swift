import Logging
import ReachdConfig
import NIOCore
import NIOHTTP1
import NIOPosix
import ReachdServiceKit

/// Serves `GET /metrics` in Prometheus's text exposition format over HTTP/1.1, on a TCP address or a Unix
/// socket. Each scrape calls `render` (on a task: it may ask actors) and answers with what it returns. Idle
/// connections cannot keep a scraper out (`ScrapeConnections`); with none open, it arms no timer.
public final class MetricsEndpoint: StartedComponent {
    private let channel: any Channel

    /// Binds `address` and starts serving; a socket path must be free (the daemons prepare it first).
    public init(address: MetricsAddress, group: any EventLoopGroup, logger: Logger,
                render: @escaping @Sendable () async -> [UInt8]) async throws {
        let connections = ScrapeConnections()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Out of descriptors (EMFILE, ENFILE): accepting pauses a second instead of spinning on the ready socket.
            .serverChannelInitializer { AcceptPause.install(on: $0, logger: logger) }
            .childChannelInitializer { channel in
                guard connections.admit(channel) else { return channel.eventLoop.makeSucceededVoidFuture() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ConnectionGuard(timeout: ScrapeConnections.idleTimeout))
                    try channel.pipeline.syncOperations.addHandler(ScrapeSlotMarker(connections: connections))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(ScrapeHandler(render: render))
                }
            }
        switch address {
        case .tcp(let host, let port):
            channel = try await bootstrap.bind(host: host, port: port).get()
        case .unix(let path):
            channel = try await bootstrap.bind(unixDomainSocketPath: path).get()
        }
        logger.info("metrics: serving on \(address) (GET /metrics)")
    }

    /// The TCP port bound (useful when asked for port 0), nil for a Unix socket.
    public var port: Int? { channel.localAddress?.port }

    public func stop() async {
        try? await channel.close()
    }
}

/// One connection: `GET /metrics` (also HEAD) answered with the exposition, anything else 404 or 405.
private final class ScrapeHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let render: @Sendable () async -> [UInt8]

    init(render: @escaping @Sendable () async -> [UInt8]) { self.render = render }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        context.triggerUserOutboundEvent(ConnectionUse.requestStarted, promise: nil)
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        let keepAlive = head.isKeepAlive, version = head.version
        let loop = context.eventLoop
        let bound = NIOLoopBound(context, eventLoop: loop)
        guard head.method == .GET || head.method == .HEAD else {
            return Self.respond(bound.value, version: version, status: .methodNotAllowed, body: Array("GET /metrics\n".utf8), keepAlive: keepAlive,
                                extra: [("Allow", "GET, HEAD")], bodyless: false)
        }
        guard path == "/metrics" else {
            return Self.respond(bound.value, version: version, status: .notFound, body: Array("not found: try /metrics\n".utf8), keepAlive: keepAlive,
                                extra: [], bodyless: head.method == .HEAD)
        }
        let isHead = head.method == .HEAD
        let render = self.render
        Task {
            let body = await render()
            loop.execute {
                Self.respond(bound.value, version: version, status: .ok, body: body, keepAlive: keepAlive,
                             extra: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], bodyless: isHead)
            }
        }
    }

    private static func respond(_ context: ChannelHandlerContext, version: HTTPVersion, status: HTTPResponseStatus, body: [UInt8],
                                keepAlive: Bool, extra: [(String, String)], bodyless: Bool) {
        var headers = HTTPHeaders(extra)
        headers.add(name: "Content-Length", value: String(body.count))
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
        if !bodyless { context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
        let done = context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)))
        let channel = context.channel
        done.whenComplete { _ in
            channel.triggerUserOutboundEvent(ConnectionUse.requestAnswered, promise: nil)
            if !keepAlive { channel.close(promise: nil) }
        }
    }
}

/// The metrics endpoint could not start; the message says where and why.
public struct MetricsError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
