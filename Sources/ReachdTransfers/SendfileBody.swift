import AsyncHTTPClient
import NIOCore
import NIOPosix
import ReachdTransferModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An upload's request body over plain http: the file goes from the page cache to the socket with `sendfile`
/// (NIO's `FileRegion`), never copied through the daemon. It is handed over in pieces, at most two waiting to be
/// written to the socket (the answer delegate reports each written one through `partWritten`, and `written`
/// passes the count on as progress): NIO always has the next, within a yielding upload's window (`RatePacer.admit`,
/// which counts the pieces not written yet). A piece is checked shortly before it goes: that the file still holds
/// it (`sendfile` at the end of a file that got shorter sends nothing, and NIO would try again forever:
/// `fileGotShorter` lets a watchdog end that). Only for plain TCP, through a client that follows no redirects: TLS
/// cannot take a file region, and a redirect could lead to https.
final class SendfileBody: Sendable {
    private let prefix: [UInt8]
    private let size: Int64
    private let suffix: [UInt8]
    /// The connection's event loop: NIO uses `regions` there, so it is closed there too.
    private let eventLoop: any EventLoop
    /// The file bytes written to the socket so far (the latest count); finishes when the request ends.
    let written: AsyncStream<Int64>
    private let writtenCounts: AsyncStream<Int64>.Continuation
    /// Descriptors of the body's own (the body may outlive the upload call, and a region must never name a
    /// descriptor number that was closed and used again): one for NIO's file regions, one for the size checks.
    private let regions: NIOFileHandle
    private let checks: Int32
    private let lifetime = Mutex<Lifetime>(Lifetime())
    /// The caps the pieces are handed over under; nil: none.
    private let pacer: RatePacer?

    /// The file is handed over in pieces of 4 MiB: each is one size check, one write through async-http-client
    /// and one progress report.
    static let pieceBytes = 4 << 20

    /// Both descriptors are closed once the request is over (every region handed to NIO is written or failed)
    /// and the loop that hands the body over is not running.
    private struct Lifetime {
        /// One promise per piece handed over and not yet written, oldest first, with its size; failed when the
        /// request ends first.
        var unwritten: [(promise: EventLoopPromise<Void>, bytes: Int)] = []
        var requestOver = false
        var bodyRunning = false
        var closed = false

        /// Whether the descriptors are to be closed now (once).
        mutating func closesNow() -> Bool {
            guard requestOver, !bodyRunning, !closed else { return false }
            closed = true
            return true
        }
    }

    /// The body of `file` (`file.size` bytes) between `prefix` and `suffix`, sent through descriptors of its own.
    /// `requestEnded()` must be called when the request is over.
    init(prefix: [UInt8], file: FileToSend, suffix: [UInt8], eventLoop: any EventLoop, pacer: RatePacer? = nil) throws {
        let forRegions = dup(file.raw)
        guard forRegions >= 0 else { throw FileError("reading the file to upload") }
        let forChecks = dup(file.raw)
        guard forChecks >= 0 else {
            close(forRegions)
            throw FileError("reading the file to upload")
        }
        (self.prefix, self.size, self.suffix, self.eventLoop, self.pacer) = (prefix, file.size, suffix, eventLoop, pacer)
        (written, writtenCounts) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        (regions, checks) = (NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: forRegions), forChecks)
    }

    var body: HTTPClient.Body {
        .stream(contentLength: Int64(prefix.count) + size + Int64(suffix.count)) { writer in
            let done = self.eventLoop.makePromise(of: Void.self)
            let started = self.lifetime.withLock { lifetime -> Bool in
                guard !lifetime.requestOver, !lifetime.bodyRunning else { return false }
                lifetime.bodyRunning = true
                return true
            }
            guard started else {
                done.fail(HTTPClientError.cancelled)
                return done.futureResult
            }
            done.completeWithTask {
                defer { self.bodyStopped() }
                try await self.send(to: writer)
            }
            return done.futureResult
        }
    }

    /// Async-http-client wrote `part` of the request to the socket (parts are written in order).
    func partWritten(_ part: IOData) {
        guard case .fileRegion(let region) = part else { return }
        writtenCounts.yield(Int64(region.endIndex))
        lifetime.withLock { $0.unwritten.isEmpty ? nil : $0.unwritten.removeFirst().promise }?.succeed()
    }

    /// Whether the file is now shorter than the body says. On the connection's event loop, where NIO uses the
    /// descriptor (after `requestEnded`, false).
    func fileGotShorter() -> Bool {
        let shorter = try? regions.withUnsafeFileDescriptor { fd -> Bool in
            var status = stat()
            return fstat(fd, &status) == 0 && Int64(status.st_size) < size
        }
        return shorter ?? false
    }

    /// The request is over: the descriptors are closed as soon as the body's loop is not running.
    func requestEnded() {
        writtenCounts.finish()
        let (unwritten, close) = lifetime.withLock { lifetime in
            defer { lifetime.unwritten = [] }
            lifetime.requestOver = true
            return (lifetime.unwritten, lifetime.closesNow())
        }
        for piece in unwritten { piece.promise.fail(HTTPClientError.cancelled) }
        if close { closeDescriptors() }
    }

    private func bodyStopped() {
        let close = lifetime.withLock { lifetime -> Bool in
            lifetime.bodyRunning = false
            return lifetime.closesNow()
        }
        if close { closeDescriptors() }
    }

    private func closeDescriptors() {
        Glibc.close(checks)
        let regions = self.regions
        eventLoop.execute { try? regions.close() }
    }

    /// Hands the body to `writer`, a piece once all but one of those before are written (and a yielding upload's
    /// window has room for it). After the last piece
    /// the body's end follows at once: a server that answers and closes as soon as it has the last byte must not
    /// find the request still open (async-http-client would fail it).
    private func send(to writer: HTTPClient.Body.StreamWriter) async throws {
        if !prefix.isEmpty { try await writer.write(.byteBuffer(ByteBuffer(bytes: prefix))).get() }
        var offset: Int64 = 0
        var unwritten: [EventLoopFuture<Void>] = []
        while offset < size {
            let count = Int(Swift.min(Int64(pacer?.pieceBytes(largest: Self.pieceBytes) ?? Self.pieceBytes), size - offset))
            await pacer?.take(count)
            if unwritten.count == 2 {
                try await unwritten.removeFirst().get()
            }
            // A yielding upload's window counts what the kernel holds, and the pieces handed over but not in it yet.
            await pacer?.admit(count + lifetime.withLock { $0.unwritten.reduce(0) { $0 + $1.bytes } })
            var status = stat()
            guard fstat(checks, &status) == 0, Int64(status.st_size) >= offset + Int64(count) else {
                throw FileError.fileToUploadGotShorter
            }
            let region = FileRegion(fileHandle: regions, readerIndex: Int(offset), endIndex: Int(offset) + count)
            offset += Int64(count)
            if offset == size {
                _ = writer.write(.fileRegion(region))
            } else {
                unwritten.append(try expectWritten(bytes: count))
                try await writer.write(.fileRegion(region)).get()
            }
        }
        if !suffix.isEmpty { _ = writer.write(.byteBuffer(ByteBuffer(bytes: suffix))) }
    }

    /// A future for the piece of `bytes` about to be handed over: fulfilled when it is written.
    private func expectWritten(bytes: Int) throws -> EventLoopFuture<Void> {
        let written = eventLoop.makePromise(of: Void.self)
        let expected = lifetime.withLock { lifetime -> Bool in
            if !lifetime.requestOver { lifetime.unwritten.append((written, bytes)) }
            return !lifetime.requestOver
        }
        guard expected else {
            written.fail(HTTPClientError.cancelled)
            throw HTTPClientError.cancelled
        }
        return written.futureResult
    }
}
