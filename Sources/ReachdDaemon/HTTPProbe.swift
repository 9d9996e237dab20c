import NIOCore
import NIOHTTP1
import NIOPosix
import ReachdModel

/// One HTTP GET for the connectivity check, on NIO (HTTP parsing by NIOHTTP1). The address is resolved
/// by the caller, so NIO's own resolver (which runs on libdispatch) is never involved.
enum HTTPProbe {
    /// The most of a body kept for the comparison.
    static let maximumBody = 4096

    static func get(_ url: ProbeURL, at address: SocketAddress, timeout: TimeAmount, group: any EventLoopGroup) async -> ProbeOutcome {
        let loop = group.next()
        let promise = loop.makePromise(of: ProbeOutcome.self)
        let timer = loop.scheduleTask(in: timeout) { promise.succeed(.failed("no answer within \(timeout.nanoseconds / 1_000_000) ms")) }
        let connect = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ProbeHandler(url: url, promise: promise))
                }
            }
            .connect(to: address)
        connect.whenFailure { promise.succeed(.failed("connect: \($0)")) }
        let outcome = (try? await promise.futureResult.get()) ?? .failed("probe abandoned")
        timer.cancel()
        if let channel = try? await connect.get() { try? await channel.close() }
        return outcome
    }
}

/// Sends the request when connected and collects the status and the start of the body.
private final class ProbeHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let url: ProbeURL
    private let promise: EventLoopPromise<ProbeOutcome>
    private var status: Int?
    private var body: [UInt8] = []

    init(url: ProbeURL, promise: EventLoopPromise<ProbeOutcome>) {
        self.url = url
        self.promise = promise
    }

    func channelActive(context: ChannelHandlerContext) {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: url.path)
        head.headers.add(name: "Host", value: url.port == 80 ? url.host : "\(url.host):\(url.port)")
        head.headers.add(name: "User-Agent", value: "reachd connectivity check")
        head.headers.add(name: "Cache-Control", value: "no-cache")
        head.headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
        case .body(let chunk):
            body += chunk.readableBytesView.prefix(HTTPProbe.maximumBody - body.count)
        case .end:
            promise.succeed(.response(status: status ?? 0, body: body))
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.succeed(.failed("connection closed before the response ended"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.succeed(.failed("\(error)"))
        context.close(promise: nil)
    }
}
