import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Serves files under `root`, one request at a time per connection (NIO's pipelining handler
/// holds back the next request until this response's `.end` is written).
final class FileServerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Bytes per sendfile write when the body is not throttled.
    private static let pieceSize: Int64 = 1 << 20

    /// The response being written.
    private struct Transfer {
        var record: RequestRecord?  // nil for the control endpoints, which are not recorded
        let version: HTTPVersion
        var keepAlive: Bool
        let isHead: Bool
        var buffer: ByteBuffer?  // an in-memory body, written before any file bytes
        var file: NIOFileHandle?
        var offset: Int64 = 0
        var remaining: Int64 = 0  // file bytes still to write
        var dropAtEnd = false  // close the connection instead of ending the response
        var ratePiece: Int64?  // throttled: bytes per tick
        var tick = TimeAmount.milliseconds(50)
        var deadline = NIODeadline.now()
    }

    private let root: String
    private let state: ServerState
    private let fileIO: NonBlockingFileIO
    private var request: HTTPRequestHead?
    private var transfer: Transfer?

    init(root: String, state: ServerState, fileIO: NonBlockingFileIO) {
        self.root = root
        self.state = state
        self.fileIO = fileIO
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break
        case .end:
            if let head = request {
                request = nil
                respond(to: head, context: context)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        abort(context: context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        abort(context: context)
        context.close(promise: nil)
    }

    // MARK: Choosing the response

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let uri = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(uri[0])
        let query = uri.count > 1 ? String(uri[1]) : ""
        var transfer = Transfer(
            record: nil, version: head.version, keepAlive: head.isKeepAlive, isHead: head.method == .HEAD
        )
        switch (head.method, path) {
        case (.GET, "/__requests"):
            return start(transfer, .ok, ["content-type": "application/json"], body: state.recordsJSON(), context)
        case (.POST, "/__reset"):
            state.reset()
            return start(transfer, .noContent, [:], context)
        default:
            transfer.record = RequestRecord(head: head, path: path, query: query)
        }
        guard head.method == .GET || head.method == .HEAD else {
            return start(transfer, .methodNotAllowed, ["allow": "GET, HEAD"], body: "method not allowed\n", context)
        }
        let components = (path.removingPercentEncoding ?? path).split(separator: "/")
        guard !components.contains("..") else {
            return start(transfer, .badRequest, [:], body: "bad path\n", context)
        }
        let faults = FaultOptions(query: query)
        let count = state.nextCount(for: path + "?" + query)
        if let hops = faults.redirect, hops > 0 {
            let next = FaultOptions.nextRedirectQuery(query, remaining: hops - 1)
            let origin = head.headers.first(name: "host").map { "http://\($0)" } ?? ""
            let location = origin + path + (next.isEmpty ? "" : "?" + next)
            return start(transfer, .found, ["location": location], context)
        }
        if let code = faults.status, count > faults.statusAfter, count <= faults.statusAfter + faults.statusTimes {
            var headers = HTTPHeaders()
            if let retryAfter = faults.retryAfter { headers.add(name: "retry-after", value: retryAfter) }
            if let cacheControl = faults.cacheControl { headers.add(name: "cache-control", value: cacheControl) }
            for (name, value) in faults.extraHeaders { headers.add(name: name, value: value) }
            return start(transfer, HTTPResponseStatus(statusCode: code), headers, context)
        }
        let filePath = ([root] + components.map(String.init)).joined(separator: "/")
        fileIO.openFile(_deprecatedPath: filePath, eventLoop: context.eventLoop).assumeIsolated().whenComplete {
            switch $0 {
            case .success(let (file, _)):
                self.serve(file, head: head, faults: faults, dropping: count <= faults.dropTimes, transfer, context)
            case .failure:
                self.start(transfer, .notFound, [:], body: "not found\n", context)
            }
        }
    }

    /// Answers from an open file: conditionals, range, then the (possibly faulty) body.
    private func serve(
        _ file: NIOFileHandle, head: HTTPRequestHead, faults: FaultOptions, dropping: Bool,
        _ transfer: Transfer, _ context: ChannelHandlerContext
    ) {
        guard let info = FileInfo(file) else {
            try? file.close()
            return start(transfer, .notFound, [:], body: "not found\n", context)
        }
        var transfer = transfer
        transfer.file = file
        var headers: HTTPHeaders = ["content-type": "application/octet-stream", "accept-ranges": "bytes"]
        if let cacheControl = faults.cacheControl { headers.add(name: "cache-control", value: cacheControl) }
        if let encoding = faults.contentEncoding { headers.add(name: "content-encoding", value: encoding) }
        if let vary = faults.vary { headers.add(name: "vary", value: vary) }
        if let age = faults.age { headers.add(name: "age", value: age) }
        for (name, value) in faults.extraHeaders { headers.add(name: name, value: value) }
        if !faults.noValidators {
            headers.add(name: "etag", value: info.etag)
            headers.add(name: "last-modified", value: info.lastModified)
            if Self.notModified(head.headers, info) { return start(transfer, .notModified, headers, context) }
        }
        var status = HTTPResponseStatus.ok
        var (first, length) = (Int64(0), info.size)
        if !faults.ignoreRange, let value = head.headers.first(name: "range"),
            faults.ignoreIfRange || Self.ifRangeHolds(head.headers.first(name: "if-range"), info, validators: !faults.noValidators),
            let range = ByteRange(header: value, size: info.size)
        {
            switch range {
            case .unsatisfiable:
                headers.add(name: "content-range", value: "bytes */\(info.size)")
                headers.add(name: "content-length", value: "0")
                return start(transfer, .rangeNotSatisfiable, headers, context)
            case .partial(let from, let to):
                status = .partialContent
                (first, length) = (from, to - from + 1)
                headers.add(name: "content-range", value: "bytes \(from)-\(to)/\(info.size)")
            }
        }
        if !faults.noLength {
            headers.add(name: "content-length", value: String(length))
        } else if head.version == .http1_0 {
            transfer.keepAlive = false  // no chunked coding in HTTP/1.0: the close ends the body
        }
        if !transfer.isHead {
            transfer.offset = first
            transfer.remaining = length
            if dropping, let dropAfter = faults.dropAfter, dropAfter <= length {
                transfer.remaining = max(0, dropAfter)
                transfer.dropAtEnd = true
            }
            transfer.ratePiece = faults.rate.map { max(1, $0 / 20) }
            if let interval = faults.trickleMilliseconds {
                (transfer.ratePiece, transfer.tick) = (1, .milliseconds(interval))
            }
        }
        start(transfer, status, headers, context)
    }

    /// If-None-Match (weak comparison), else If-Modified-Since against the second-resolution mtime.
    private static func notModified(_ headers: HTTPHeaders, _ info: FileInfo) -> Bool {
        if let tags = headers.first(name: "if-none-match") {
            return tags.split(separator: ",").contains { tag in
                let tag = tag.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "W/", with: "")
                return tag == "*" || tag == info.etag
            }
        }
        guard let since = headers.first(name: "if-modified-since").flatMap(HTTPDate.parse) else { return false }
        return info.mtime <= since
    }

    /// If-Range: absent, or a strong ETag match, or exactly the Last-Modified date.
    private static func ifRangeHolds(_ value: String?, _ info: FileInfo, validators: Bool) -> Bool {
        guard let value else { return true }
        return validators && (value == info.etag || value == info.lastModified)
    }

    // MARK: Writing

    /// Writes the response head, then the body piece by piece.
    private func start(
        _ transfer: Transfer, _ status: HTTPResponseStatus, _ headers: HTTPHeaders, body: String? = nil,
        _ context: ChannelHandlerContext
    ) {
        var transfer = transfer
        var headers = headers
        transfer.record?.status = Int(status.code)
        if transfer.file == nil {
            let buffer = ByteBuffer(string: body ?? "")
            headers.replaceOrAdd(name: "content-length", value: String(buffer.readableBytes))
            if body != nil, !headers.contains(name: "content-type") {
                headers.add(name: "content-type", value: "text/plain")
            }
            if !transfer.isHead && buffer.readableBytes > 0 { transfer.buffer = buffer }
        }
        if !transfer.keepAlive { headers.replaceOrAdd(name: "connection", value: "close") }
        self.transfer = transfer
        let head = HTTPResponseHead(version: transfer.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        sendNext(context: context)
    }

    /// Writes the next body piece once the previous one is out, or ends the response.
    private func sendNext(context: ChannelHandlerContext) {
        guard var transfer else { return }
        let part: IOData
        let count: Int64
        if let buffer = transfer.buffer {
            transfer.buffer = nil
            (part, count) = (.byteBuffer(buffer), Int64(buffer.readableBytes))
        } else if transfer.remaining > 0, let file = transfer.file {
            count = min(transfer.remaining, transfer.ratePiece ?? Self.pieceSize)
            let end = Int(transfer.offset + count)
            part = .fileRegion(FileRegion(fileHandle: file, readerIndex: Int(transfer.offset), endIndex: end))
            transfer.offset += count
            transfer.remaining -= count
        } else {
            return end(transfer, context: context)
        }
        self.transfer = transfer
        context.writeAndFlush(wrapOutboundOut(.body(part))).assumeIsolated().whenComplete { result in
            guard case .success = result, self.transfer != nil else { return self.abort(context: context) }
            self.transfer?.record?.bodyBytes += count
            guard self.transfer?.ratePiece != nil, let deadline = self.transfer?.deadline else {
                return self.sendNext(context: context)
            }
            let next = max(deadline + (self.transfer?.tick ?? .milliseconds(50)), .now())
            self.transfer?.deadline = next
            context.eventLoop.assumeIsolated().scheduleTask(deadline: next) { self.sendNext(context: context) }
        }
    }

    /// Ends the response, or drops the connection when the request asked for it.
    private func end(_ transfer: Transfer, context: ChannelHandlerContext) {
        // Cleared before writing `.end`: the pipelining handler may deliver the next request inside that write.
        self.transfer = nil
        try? transfer.file?.close()
        if transfer.dropAtEnd {
            log(transfer, completed: false)
            return context.close(promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { result in
            let completed = if case .success = result { true } else { false }
            self.log(transfer, completed: completed)
            if !completed || !transfer.keepAlive { context.close(promise: nil) }
        }
    }

    /// Gives up on the current response (write failed, peer gone) and closes the connection.
    private func abort(context: ChannelHandlerContext) {
        guard let transfer else { return }
        self.transfer = nil
        try? transfer.file?.close()
        log(transfer, completed: false)
        context.close(promise: nil)
    }

    private func log(_ transfer: Transfer, completed: Bool) {
        if let record = transfer.record { state.add(record.json(completed: completed)) }
    }
}
