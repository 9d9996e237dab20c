import AsyncHTTPClient
import NIOCore

/// How streaming a response body into a file ended.
enum BodyEnd {
    /// The body ended; the file holds everything up to this position.
    case ended(Int64)
    /// The task was cancelled: the file holds everything that arrived, up to this position.
    case cancelled(Int64)
    /// The body broke off with this error; the file holds everything that arrived, up to this position.
    case broken(Int64, any Error)
    /// More than this limit arrived.
    case overLimit(Int64)
    /// A write failed.
    case writeFailed(FileError)
}

extension Fetcher {
    /// Streams `body` into `file` from `start`, one batch written on a file thread while the next is received. Stops
    /// (after writing what arrived) when the task is cancelled, at once when the file would pass `limit` bytes.
    /// `progress` is told the bytes on disk every `Fetcher.progressBytes` and at the end.
    func receive(_ body: HTTPClientResponse.Body, into file: PartialFile, at start: Int64, limit: Int64?, pacer: RatePacer? = nil,
                 progress: ((Int64) async -> Void)? = nil) async -> BodyEnd {
        var writer = PartialFileWriter(file: file, position: start)
        var batch: [ByteBuffer] = []
        var batchBytes = 0
        var reported = start
        var streamError: (any Error)?
        do {
            for try await chunk in body {
                batch.append(chunk)
                batchBytes += chunk.readableBytes
                // Not reading holds the sender back: the socket's receive buffer fills and TCP's window closes.
                await pacer?.take(chunk.readableBytes)
                if let limit, writer.queuedEnd + Int64(batchBytes) > limit {
                    try? await writer.finish()
                    return .overLimit(limit)
                }
                if batchBytes >= PartialFileWriter.batchBytes {
                    do throws(FileError) {
                        try await writer.submit(batch, bytes: batchBytes)
                    } catch {
                        return .writeFailed(error)
                    }
                    batch.removeAll(keepingCapacity: true)
                    batchBytes = 0
                    if let progress, writer.written - reported >= Self.progressBytes {
                        reported = writer.written
                        await progress(reported)
                    }
                }
                if Task.isCancelled { break }
            }
        } catch {
            streamError = error
        }
        do throws(FileError) {
            if batchBytes > 0 { try await writer.submit(batch, bytes: batchBytes) }
            try await writer.finish()
        } catch {
            return .writeFailed(error)
        }
        await progress?(writer.written)
        if Task.isCancelled { return .cancelled(writer.written) }
        if let streamError { return .broken(writer.written, streamError) }
        return .ended(writer.written)
    }
}
