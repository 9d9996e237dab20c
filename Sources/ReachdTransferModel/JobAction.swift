/// What the shell around a `JobMachine` must do, in order.
public enum JobAction: Hashable, Sendable {
    /// Write the job to the store.
    case persist(Job)
    /// Tell the job's watchers.
    case notify(Job)
    /// The job changed state (the metrics count it).
    case stateChanged(Job)
    /// Start a transfer task for the job.
    case startAttempt
    /// Cancel the running transfer task (its intent is kept in the machine).
    case stopAttempt
    /// Ask the server for the size (HEAD), then feed `sizeProbed`.
    case probeSize
    /// Compute the SHA-256 of the partial file, then feed `digestComputed`.
    case verifyDigest
    /// Move the complete partial file into place, then feed `movedIntoPlace`.
    case moveIntoPlace
    /// Delete the partial file.
    case removePartial
    /// Measure the file in place, then feed `outputMeasured`.
    case measureOutput
    /// Follow (or stop following) the verdict for the job's host.
    case watchHost
    case unwatchHost
    /// The transfer task is over: its slot is free.
    case attemptOver
    /// Re-decide the whole queue.
    case reschedule
    /// Drop the job from the store and the table.
    case forget
    /// Metrics: a retry, a refresh check's result, bytes moved.
    case countRetry
    case countRefresh(RefreshResult)
    case countTransferred(bytes: Int64, upload: Bool)
    /// An informational log line.
    case log(String, metadata: [String: String])
    /// The owner's operation is refused (a conflict); nothing changed.
    case refuse(String)
}

/// How a refresh check ended, as the metrics count it.
public enum RefreshResult: String, Hashable, Sendable, CaseIterable {
    case notModified = "not_modified", changed, failed
}
