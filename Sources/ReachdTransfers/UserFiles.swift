import NIOPosix
import ReachdSystem
import ReachdTransferModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A file operation failed; `description` is shown to the client or in the job's reason.
package struct FileError: Error, CustomStringConvertible, Sendable {
    /// What the kernel said; nil for a failure it did not report.
    package var errno: Errno?
    package var description: String

    /// `what` failed with `errno` (by default the calling thread's `errno` now; 0 counts as not reported).
    init(_ what: String, errno: Errno? = .current) {
        self.errno = errno?.rawValue == 0 ? nil : errno
        self.description = self.errno.map { "\(what): \($0)" } ?? what
    }

    /// `what` failed because `error`'s call did.
    init(_ what: String, _ error: SystemCallError) { self.init(what, errno: error.errno) }

    /// The file being uploaded ends before the length the request announced.
    static var fileToUploadGotShorter: FileError { FileError("the file to upload got shorter", errno: nil) }

    /// A write to a file in `directory` has not returned for `FileThreads.answerSeconds`: its file system does not answer.
    static func notAnswering(_ directory: String) -> FileError {
        var error = FileError("the file system of \(directory) does not answer: a write has waited \(Int(FileThreads.answerSeconds)) s", errno: nil)
        error.directoryNotAnswering = directory
        return error
    }

    /// Set for `notAnswering`: the directory whose file system does not answer.
    package var directoryNotAnswering: String?

    var isPermission: Bool { errno.map { [EACCES, EPERM, EROFS].contains($0.rawValue) } ?? false }
    var isDiskFull: Bool { errno.map { [ENOSPC, EDQUOT].contains($0.rawValue) } ?? false }
}

/// An open regular file and its size when opened (`fstat`).
struct RegularFile: ~Copyable {
    var descriptor: OwnedDescriptor
    let size: Int64
}

/// Creates, opens, renames and removes job files on the file threads, as the daemon's own user: a per-user
/// instance is the user, so the kernel decides (permissions, ACLs, read-only mounts) exactly as for them; the
/// system instance writes only where its administrator has granted its user. Nothing switches identity.
/// Files inside `guarded` directories (the job table, the offline cache) are refused, so that no client can
/// have the daemon upload, checksum or overwrite what it keeps for other clients. Every blocking call on a
/// file (the partial files' writes and flushes, the uploads' reads, digests) runs on these threads.
public final class UserFiles: Sendable {
    /// The file threads.
    let threads = FileThreads()
    private let guarded: [String]
    /// Directories with a write that has not returned for `FileThreads.answerSeconds`: how many such writes each.
    private let stuck = Mutex<[String: Int]>([:])
    /// Told when a stuck write returns (`answered`).
    private let answeredHandler = Mutex<(@Sendable () -> Void)?>(nil)

    public init(guarded: [String]) {
        self.guarded = guarded.map { $0.hasSuffix("/") ? $0 : $0 + "/" }
    }

    /// No file call starts from now on (a thread stuck in a hung file system is not waited for).
    public func shutdown() { threads.stop() }

    /// Whether `directory`'s file system answers: no write there has waited `FileThreads.answerSeconds` and not returned.
    func isAnswering(_ directory: String) -> Bool { stuck.withLock { $0[directory] == nil } }

    /// Calls `handler` whenever a stuck write returns.
    func onAnswered(_ handler: @escaping @Sendable () -> Void) {
        answeredHandler.withLock { $0 = handler }
    }

    /// A write to a file in `directory` has not returned in time; `answered` is to be called when it does.
    func writeStuck(in directory: String) {
        stuck.withLock { $0[directory, default: 0] += 1 }
    }

    /// A write that was stuck in `directory` returned.
    func answered(in directory: String) {
        stuck.withLock { stuck in
            let left = (stuck[directory] ?? 1) - 1
            stuck[directory] = left > 0 ? left : nil
        }
        answeredHandler.withLock { $0 }?()
    }

    /// Runs `body` on the file threads, waited for even in a cancelled task.
    func run<T: Sendable>(_ body: @Sendable @escaping () throws(FileError) -> T) async throws(FileError) -> T {
        do {
            return try await threads.run(body)
        } catch let error as FileError {
            throw error
        } catch {
            throw FileError("the file threads have stopped: \(error)", errno: nil)
        }
    }

    /// `openRegular`, refusing what lies in a guarded directory (checked on the open descriptor, whatever
    /// symbolic links led there).
    func open(_ path: String, _ flags: Int32, mode: mode_t = 0, failure: @autoclosure () -> String) throws(FileError) -> RegularFile {
        let file = try Self.openRegular(path, flags, mode: mode, failure: failure())
        try refuseIfGuarded(file.descriptor.raw, named: path)
        return file
    }

    /// Throws when the open file or directory `fd` is a guarded directory or lies inside one.
    func refuseIfGuarded(_ fd: Int32, named path: String) throws(FileError) {
        guard let actual = Self.path(of: fd), guarded.contains(where: { (actual + "/").hasPrefix($0) }) else { return }
        throw FileError("\(path) is inside reachd-transfers' own state or cache directory", errno: Errno(EACCES))
    }

    /// The path the kernel has for an open descriptor.
    private static func path(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Opens `path` without blocking and only if it is a regular file: a FIFO, device or directory would
    /// block a file thread (and with it other jobs' file operations) or is no file to transfer.
    /// The descriptor is returned in blocking mode, with the size the check measured.
    static func openRegular(_ path: String, _ flags: Int32, mode: mode_t = 0, failure: @autoclosure () -> String) throws(FileError) -> RegularFile {
        let file: OwnedDescriptor
        do throws(SystemCallError) {
            file = try OwnedDescriptor.open(path, flags | O_NONBLOCK | O_NOCTTY, mode: mode)
        } catch {
            throw FileError(failure(), error)
        }
        var info = stat()
        let raw = file.raw
        guard (try? SystemCall.retrying("fstat", { fstat(raw, &info) })) != nil, (info.st_mode & S_IFMT) == S_IFREG else {
            throw FileError("\(path) is not a regular file (a FIFO, device or directory cannot be read or written by a transfer)",
                            errno: Errno(EINVAL))
        }
        _ = fcntl(file.raw, F_SETFL, fcntl(file.raw, F_GETFL) & ~O_NONBLOCK)
        return RegularFile(descriptor: file, size: Int64(info.st_size))
    }

    /// Checks that `job.file` can be created, by creating its (empty) partial file next to it.
    func createPartial(for job: Job) async throws(FileError) {
        try await run { () throws(FileError) in
            var info = stat()
            if stat(job.file, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
                throw FileError("\(job.file) is a directory", errno: Errno(EISDIR))
            }
            _ = try self.open(job.partialPath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o644,
                              failure: "cannot create \(job.partialPath)")
        }
    }

    /// Size of the file at `path` (a job's output), 0 when it is missing.
    func size(of path: String) async -> Int64 {
        (try? await run {
            var info = stat()
            return stat(path, &info) == 0 ? Int64(info.st_size) : 0
        }) ?? 0
    }

    /// Creates (truncating) one of the daemon's own files (the offline cache's) with exactly `mode`, to be written
    /// and moved into place.
    func create(_ path: String, mode: mode_t) async throws(FileError) -> PartialFile {
        try await run { () throws(FileError) in
            let file = try Self.openRegular(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: mode, failure: "cannot create \(path)")
            fchmod(file.descriptor.raw, mode)
            return PartialFile(path: path, opened: file, files: self, isClients: false)
        }
    }

    /// Removes a file; a missing file is fine.
    func remove(_ path: String) async {
        _ = try? await run { unlink(path) }
    }

    /// Opens a regular file for an upload.
    func openForReading(_ path: String) async throws(FileError) -> FileToSend {
        try await run { () throws(FileError) in
            let file = try self.open(path, O_RDONLY, failure: "cannot read \(path)")
            let size = file.size
            return FileToSend(descriptor: file.descriptor, size: size, threads: self.threads)
        }
    }

    /// The size of a regular file the daemon may read (checked by opening it).
    func readableSize(of path: String) async throws(FileError) -> Int64 {
        try await openForReading(path).size
    }

    /// A small text file (at most 1 MiB), read with `SmallFile`'s loop.
    func read(_ path: String) async throws(FileError) -> String {
        try await run { () throws(FileError) in
            let file = try self.open(path, O_RDONLY, failure: "cannot read \(path)")
            return String(decoding: SmallFile.bytes(of: file.descriptor, limit: 1 << 20).prefix(1 << 20), as: UTF8.self)
        }
    }

    /// Lowercase hex SHA-256 of a file the daemon may read (a download's partial file, to check it).
    func sha256(ofFileAt path: String) async throws(FileError) -> String {
        try await run { () throws(FileError) in
            let file = try self.open(path, O_RDONLY, failure: "cannot read \(path)")
            return try FileDigest.sha256(of: file.descriptor)
        }
    }

    /// Removes the partial file (cancelled or failed job); a missing file is fine.
    func removePartial(of job: Job) async {
        _ = try? await run { unlink(job.partialPath) }
    }
}
