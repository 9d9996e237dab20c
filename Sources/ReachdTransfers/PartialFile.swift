import NIOPosix
import ReachdSystem
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// A file written before it is moved into place: a download's partial file (`Job.partialPath`) or a body the
/// offline cache is fetching. The value owns the open descriptor (closed when the value goes); the file's size,
/// its writes (`PartialFileWriter`), flush, truncation and the rename into place are its calls, each on the file
/// threads of the `UserFiles` that opened it. Nothing outside it and its writer sees the descriptor.
final class PartialFile: Sendable {
    /// Where the file is.
    let path: String
    /// Opened it, and runs its blocking calls.
    let files: UserFiles
    private let descriptor: OwnedDescriptor
    /// The file's size when it was opened (`fstat`, the open's check that it is a regular file).
    let sizeWhenOpened: Int64
    /// A client's file, whose rename into place is refused in a guarded directory; false for the daemon's own.
    private let isClients: Bool

    init(path: String, opened: consuming RegularFile, files: UserFiles, isClients: Bool) {
        self.path = path
        self.sizeWhenOpened = opened.size
        self.descriptor = opened.descriptor
        self.files = files
        self.isClients = isClients
    }

    /// The directory the file is in.
    var directory: String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The file threads its writes run on.
    var threads: FileThreads { files.threads }

    /// Opens the partial file of download `job` for writing, creating it if it went missing.
    static func open(for job: Job, files: UserFiles) async throws(FileError) -> PartialFile {
        try await opening(job, O_WRONLY | O_CREAT | O_NOFOLLOW, mode: 0o644, files: files)
    }

    /// Opens the partial file of download `job` for writing if it exists; nil when it is missing.
    static func openIfPresent(for job: Job, files: UserFiles) async throws(FileError) -> PartialFile? {
        do {
            return try await opening(job, O_WRONLY | O_NOFOLLOW, files: files)
        } catch {
            if error.errno?.rawValue == ENOENT { return nil }
            throw error
        }
    }

    /// Opens the partial file of download `job` as it is (not created), for measuring or moving it into place.
    static func existing(for job: Job, files: UserFiles) async throws(FileError) -> PartialFile {
        try await opening(job, O_RDONLY | O_NOFOLLOW, files: files)
    }

    /// Opens the partial file of download `job` with `flags` on the file threads.
    private static func opening(_ job: Job, _ flags: Int32, mode: mode_t = 0, files: UserFiles) async throws(FileError) -> PartialFile {
        try await files.run { () throws(FileError) in
            PartialFile(path: job.partialPath, opened: try files.open(job.partialPath, flags, mode: mode, failure: "cannot open \(job.partialPath)"),
                        files: files, isClients: true)
        }
    }

    /// The size of the partial file of download `job` when opened; 0 when it is missing or cannot be opened.
    static func size(of job: Job, files: UserFiles) async -> Int64 {
        (try? await existing(for: job, files: files))?.sizeWhenOpened ?? 0
    }

    /// The file's size now (`fstat` of its descriptor), as written since it was opened.
    func size() async throws(FileError) -> Int64 {
        try await files.run { () throws(FileError) in
            var info = stat()
            do throws(SystemCallError) {
                try SystemCall.retrying("fstat") { fstat(self.descriptor.raw, &info) }
            } catch {
                throw FileError("measuring \(self.path)", error)
            }
            return Int64(info.st_size)
        }
    }

    /// Flushes the file to disk.
    func sync() async throws(FileError) {
        try await call("fsync", failure: "flushing the partial file") { fsync($0) }
    }

    /// Empties the file.
    func truncate() async throws(FileError) {
        try await call("ftruncate", failure: "truncating the partial file") { ftruncate($0, 0) }
    }

    /// Calls `body` with the descriptor, for the writer's calls on a file thread; valid for the call.
    func withOpenDescriptor<T>(_ body: (Int32) throws(FileError) -> T) throws(FileError) -> T {
        try body(descriptor.raw)
    }

    /// Moves the file over `target` in one step, within `target`'s directory as opened (for a client's file, checked
    /// not to be guarded), then makes the rename durable. A failed rename leaves the file where it is.
    func moveIntoPlace(at target: String) async throws(FileError) {
        try await files.run { () throws(FileError) in
            let slash = target.lastIndex(of: "/")!
            let directory = String(target[..<slash]), name = String(target[target.index(after: slash)...])
            let ownName = String(self.path[self.path.index(after: self.path.lastIndex(of: "/")!)...])
            let opened = try Self.openDirectory(directory.isEmpty ? "/" : directory, of: target)
            let at = opened.raw
            if self.isClients { try self.files.refuseIfGuarded(at, named: target) }
            do throws(SystemCallError) {
                try SystemCall.retrying("renameat") { renameat(at, ownName, at, name) }
            } catch {
                throw FileError("cannot rename \(self.path) to \(target)", error)
            }
            fsync(at)
        }
    }

    /// Opens `directory`, where `target` goes.
    private static func openDirectory(_ directory: String, of target: String) throws(FileError) -> OwnedDescriptor {
        do throws(SystemCallError) {
            return try OwnedDescriptor.open(directory, O_RDONLY | O_DIRECTORY)
        } catch {
            throw FileError("cannot open the directory of \(target)", error)
        }
    }

    /// `body` (a call that reports failure as -1 and `errno`) on the descriptor, on the file threads.
    private func call(_ name: String, failure: String, _ body: @Sendable @escaping (Int32) -> Int32) async throws(FileError) {
        try await files.run { () throws(FileError) in
            do throws(SystemCallError) {
                try SystemCall.retrying(name) { body(self.descriptor.raw) }
            } catch {
                throw FileError(failure, error)
            }
        }
    }
}
