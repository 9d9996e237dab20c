/// How one HTTP attempt of a job ended.
public enum FetchOutcome: Sendable {
    /// The partial file holds the whole file (`total` bytes), flushed to disk.
    case complete(total: Int64)
    /// 304 to a refresh check: the file in place is current; nothing was transferred.
    case notModified
    /// An upload the server accepted (2xx), with the start of its answer.
    case uploaded(status: Int, body: String)
    /// Try again later; `retryAfter` in seconds when the server said.
    case retry(reason: String, retryAfter: Double?)
    /// The partial file was dropped: ask again from byte 0.
    case restart(reason: String)
    case failed(reason: String)
    /// The size the server announced is not allowed on the current route; the partial file is kept.
    case notAllowed(total: Int64?)
    /// Stopped by the scheduler (pause, metered switch, cancel); what was received is on disk.
    case stopped
    /// A write to the partial file has not returned (its file system does not answer): the job waits, no attempt
    /// counted, while the gate holds its directory; it goes on from its partial file once the write returns.
    case destinationNotAnswering(reason: String)
}
