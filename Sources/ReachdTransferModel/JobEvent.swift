/// What happens to one job, fed to its `JobMachine`.
public enum JobEvent: Sendable {
    /// The job was read from the store at start; an unfinished one's partial file holds `partialSize` bytes.
    case recovered(partialSize: Int64)
    /// A new job was stored.
    case added
    case pause
    case resume
    case refresh
    /// The owner changed the job's own rate cap (bytes per second; nil: none), also while it runs.
    case capRate(Int64?)
    /// The proxy the job's requests go through is another now (the desktop's settings answered anew): `Job.viaProxy`.
    case proxyChosen(String?)
    case cancel
    /// The owner asks to drop a finished job.
    case remove
    /// The service is stopping: a running transfer stops, its partial file stays.
    case shutdown
    /// The machine is going to sleep: a running transfer stops, its partial file stays; the job waits until the
    /// scheduler starts it again at resume.
    case machineSleeps
    /// Re-decide the job against its route and the clock: a verdict changed, a timer fired, another job ended.
    case reevaluate(JobRoute)
    /// The queue gave the job a free slot.
    case start
    /// The server answered: the transfer starts at `offset` of `total` bytes, of the version `validators` name.
    case attemptStarted(offset: Int64, total: Int64?, validators: Validators)
    /// An upload's file was opened: `size` bytes to send.
    case uploadOpened(size: Int64)
    /// `bytes` have arrived (a download) or been sent (an upload) in this attempt.
    case progressed(bytes: Int64, yielding: Bool = false)
    /// The attempt ended; a download's partial file now holds `partialSize` bytes.
    case attemptEnded(FetchOutcome, partialSize: Int64)
    /// The SHA-256 of a complete partial file, or why it could not be read.
    case digestComputed(Result<String, JobFailure>)
    /// The complete file was moved into place, or why it was not.
    case movedIntoPlace(JobFailure?)
    /// The size of the file in place (after a 304).
    case outputMeasured(Int64)
    /// The partial file asked to be removed is gone.
    case partialRemoved
    /// The server's answer to a size probe (nil: it did not say).
    case sizeProbed(Int64?)
}

/// Why a file operation failed, as a job's reason shows it.
public struct JobFailure: Error, Hashable, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
