import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// The partial file of one download attempt. One that holds bytes already is opened when the attempt begins; a
/// missing one is created only when the attempt has something to write, so an attempt that ends before a body
/// (a refresh check answered 304, a failure, a retry) creates and removes no file in the client's directory.
actor AttemptPartialFile {
    private let job: Job
    private let files: UserFiles
    /// The file once opened or created.
    private(set) var file: PartialFile?
    /// The bytes the file held when the attempt began (0 when it was missing).
    nonisolated let sizeAtStart: Int64

    private init(job: Job, files: UserFiles, existing: PartialFile?) {
        (self.job, self.files, file) = (job, files, existing)
        sizeAtStart = existing?.sizeWhenOpened ?? 0
    }

    /// Opens the partial file of download `job` if it is there (else it is created when written).
    static func open(for job: Job, files: UserFiles) async throws(FileError) -> AttemptPartialFile {
        AttemptPartialFile(job: job, files: files, existing: try await PartialFile.openIfPresent(for: job, files: files))
    }

    /// The file, created now if it is missing.
    func created() async throws(FileError) -> PartialFile {
        if let file { return file }
        let new = try await PartialFile.open(for: job, files: files)
        file = new
        return new
    }

    /// What the file holds now; 0 when it was never created.
    func size() async -> Int64 {
        guard let file else { return 0 }
        return (try? await file.size()) ?? 0
    }
}
