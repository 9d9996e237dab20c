import NIOPosix
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// A file operation failed; `description` is shown to the client or in the job's reason.
public struct FileError: Error, CustomStringConvertible, Sendable {
    public var errno: Int32
    public var description: String

    /// `what` failed with `errno`; 0 for a failure the kernel did not report.
    init(_ what: String, errno: Int32 = Glibc.errno) {
        self.errno = errno
        self.description = errno == 0 ? what : "\(what): \(String(cString: strerror(errno)))"
    }

    /// The file being uploaded ends before the length the request announced.
    static var fileToUploadGotShorter: FileError { FileError("the file to upload got shorter", errno: 0) }

    var isPermission: Bool { errno == EACCES || errno == EPERM || errno == EROFS }
    var isDiskFull: Bool { errno == ENOSPC || errno == EDQUOT }
}

/// Creates, opens, renames and removes job files on one file thread, as the daemon's own user: a per-user
/// instance is the user, so the kernel decides (permissions, ACLs, read-only mounts) exactly as for them; the
/// system instance writes only where its administrator has granted its user. Nothing switches identity.
/// Files inside `guarded` directories (the job table, the offline cache) are refused, so that no client can
/// have the daemon upload, checksum or overwrite what it keeps for other clients.
public final class UserFiles: Sendable {
    private let pool: NIOThreadPool
    private let guarded: [String]

    public init(guarded: [String]) {
        self.guarded = guarded.map { $0.hasSuffix("/") ? $0 : $0 + "/" }
        pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
    }

    public func shutdown() async { try? await pool.shutdownGracefully() }

    /// Runs `body` on the file thread.
    func run<T: Sendable>(_ body: @Sendable @escaping () throws -> T) async throws -> T {
        try await pool.runUncancellable(body)
    }

    /// `openRegular`, refusing what lies in a guarded directory (checked on the open descriptor, whatever
    /// symbolic links led there).
    func open(_ path: String, _ flags: Int32, mode: mode_t = 0, failure: @autoclosure () -> String) throws -> Int32 {
        let fd = try Self.openRegular(path, flags, mode: mode, failure: failure())
        do {
            try refuseIfGuarded(fd, named: path)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Throws when the open file or directory `fd` is a guarded directory or lies inside one.
    private func refuseIfGuarded(_ fd: Int32, named path: String) throws {
        guard let actual = Self.path(of: fd), guarded.contains(where: { (actual + "/").hasPrefix($0) }) else { return }
        throw FileError("\(path) is inside reachd-transfers' own state or cache directory", errno: EACCES)
    }

    /// The path the kernel has for an open descriptor.
    private static func path(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Opens `path` without blocking and only if it is a regular file: a FIFO, device or directory would
    /// block the file thread (and with it every job's file operations) or is no file to transfer.
    /// The descriptor is returned in blocking mode.
    static func openRegular(_ path: String, _ flags: Int32, mode: mode_t = 0, failure: @autoclosure () -> String) throws -> Int32 {
        let fd = Glibc.open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode)
        guard fd >= 0 else { throw FileError(failure()) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw FileError("\(path) is not a regular file (a FIFO, device or directory cannot be read or written by a transfer)", errno: EINVAL)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// Checks that `job.file` can be created, by creating its (empty) partial file next to it.
    func createPartial(for job: Job) async throws {
        try await run {
            var info = stat()
            if stat(job.file, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
                throw FileError("\(job.file) is a directory", errno: EISDIR)
            }
            let fd = try self.open(job.partialPath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o644,
                                   failure: "cannot create \(job.partialPath)")
            close(fd)
        }
    }

    /// Opens the partial file for writing (creating it if it went missing); the caller closes the descriptor.
    func openPartial(for job: Job) async throws -> Int32 {
        try await run {
            try self.open(job.partialPath, O_WRONLY | O_CREAT | O_NOFOLLOW, mode: 0o644, failure: "cannot open \(job.partialPath)")
        }
    }

    /// Size of the partial file, 0 when it is missing.
    func partialSize(of job: Job) async -> Int64 { await size(of: job.partialPath) }

    /// Size of the file at `path`, 0 when it is missing.
    func size(of path: String) async -> Int64 {
        (try? await run {
            var info = stat()
            return stat(path, &info) == 0 ? Int64(info.st_size) : 0
        }) ?? 0
    }

    /// Creates (truncating) one of the daemon's own files (the offline cache's) with exactly `mode`; the caller closes the descriptor.
    func create(_ path: String, mode: mode_t) async throws -> Int32 {
        try await run {
            let fd = try Self.openRegular(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: mode, failure: "cannot create \(path)")
            fchmod(fd, mode)
            return fd
        }
    }

    func rename(_ path: String, to target: String) async throws {
        try await run {
            guard Glibc.rename(path, target) == 0 else { throw FileError("cannot rename \(path) to \(target)") }
        }
    }

    /// Removes a file; a missing file is fine.
    func remove(_ path: String) async {
        _ = try? await run { unlink(path) }
    }

    /// Opens a regular file for reading; the caller closes the descriptor.
    func openForReading(_ path: String) async throws -> (fd: Int32, size: Int64) {
        try await run {
            let fd = try self.open(path, O_RDONLY, failure: "cannot read \(path)")
            var info = stat()
            fstat(fd, &info)
            return (fd, Int64(info.st_size))
        }
    }

    /// The size of a regular file the daemon may read (checked by opening it).
    func readableSize(of path: String) async throws -> Int64 {
        let source = try await openForReading(path)
        close(source.fd)
        return source.size
    }

    /// A small text file (at most 1 MiB).
    func read(_ path: String) async throws -> String {
        try await run {
            let fd = try self.open(path, O_RDONLY, failure: "cannot read \(path)")
            defer { close(fd) }
            var bytes = [UInt8](repeating: 0, count: 1 << 20)
            var count = 0
            while count < bytes.count {
                let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                count += n
            }
            return String(decoding: bytes.prefix(count), as: UTF8.self)
        }
    }

    /// Moves the finished partial file over the output in one step, within the output's directory as opened
    /// (and checked not to be guarded), then makes the rename durable.
    func moveIntoPlace(_ job: Job) async throws {
        try await run {
            let slash = job.file.lastIndex(of: "/")!
            let directory = String(job.file[..<slash]), name = String(job.file[job.file.index(after: slash)...])
            let partialName = String(job.partialPath[job.partialPath.index(after: job.partialPath.lastIndex(of: "/")!)...])
            let fd = Glibc.open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { throw FileError("cannot open the directory of \(job.file)") }
            defer { close(fd) }
            try self.refuseIfGuarded(fd, named: job.file)
            guard renameat(fd, partialName, fd, name) == 0 else { throw FileError("cannot rename the download to \(job.file)") }
            fsync(fd)
        }
    }

    /// Removes the partial file (cancelled or failed job); a missing file is fine.
    func removePartial(of job: Job) async {
        _ = try? await run { unlink(job.partialPath) }
    }
}
