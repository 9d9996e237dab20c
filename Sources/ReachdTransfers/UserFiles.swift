import CReachdFiles
import NIOPosix
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// A file operation failed; `description` is shown to the client or in the job's reason.
public struct FileError: Error, CustomStringConvertible, Sendable {
    public var errno: Int32
    public var description: String

    init(_ what: String, errno: Int32 = Glibc.errno) {
        self.errno = errno
        self.description = "\(what): \(String(cString: strerror(errno)))"
    }

    var isPermission: Bool { errno == EACCES || errno == EPERM || errno == EROFS }
    var isDiskFull: Bool { errno == ENOSPC || errno == EDQUOT }
}

/// Creates, opens, renames and removes job files *as the job's owner*: on one thread whose file-system
/// identity is switched to the owner's uid, gid and groups for each operation, so the kernel decides
/// (permissions, ACLs, read-only mounts) exactly as for the user. A daemon not running as root serves
/// its own uid only.
public final class UserFiles: Sendable {
    private let pool: NIOThreadPool
    private let switchesIdentity: Bool

    public init() throws {
        switchesIdentity = geteuid() == 0
        if switchesIdentity, reachd_files_init() != 0 { throw FileError("reading the process's groups") }
        pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
    }

    public func shutdown() async { try? await pool.shutdownGracefully() }

    /// Whether this daemon can act for `owner` at all.
    public func canServe(_ owner: Owner) -> Bool { switchesIdentity || owner.uid == geteuid() }

    /// Runs `body` on the identity thread as `owner`.
    func run<T: Sendable>(as owner: Owner, _ body: @Sendable @escaping () throws -> T) async throws -> T {
        let switches = switchesIdentity
        return try await pool.runUncancellable {
            if switches {
                let status = owner.groups.withUnsafeBufferPointer { reachd_thread_assume(owner.uid, owner.gid, $0.baseAddress, $0.count) }
                guard status == 0 else { throw FileError("switching to uid \(owner.uid)") }
            }
            defer { if switches { reachd_thread_restore() } }
            return try body()
        }
    }

    /// Opens `path` without blocking and only if it is a regular file: a FIFO, device or directory would
    /// block the identity thread (and with it every user's file operations) or is no file to transfer.
    /// The descriptor is returned in blocking mode.
    static func openRegular(_ path: String, _ flags: Int32, mode: mode_t = 0, failure: @autoclosure () -> String) throws -> Int32 {
        let fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode)
        guard fd >= 0 else { throw FileError(failure()) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw FileError("\(path) is not a regular file (a FIFO, device or directory cannot be read or written by a transfer)", errno: EINVAL)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// Checks that the owner may create `job.output`, by creating its (empty) partial file next to it.
    func createPartial(for job: Job) async throws {
        try await run(as: job.owner) {
            var info = stat()
            if stat(job.output, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
                throw FileError("\(job.output) is a directory", errno: EISDIR)
            }
            let fd = try Self.openRegular(job.partialPath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o644,
                                          failure: "cannot create \(job.partialPath) as uid \(job.owner.uid)")
            close(fd)
        }
    }

    /// Opens the partial file for writing (creating it if it went missing); the caller closes the descriptor.
    func openPartial(for job: Job) async throws -> Int32 {
        try await run(as: job.owner) {
            try Self.openRegular(job.partialPath, O_WRONLY | O_CREAT | O_NOFOLLOW, mode: 0o644,
                                 failure: "cannot open \(job.partialPath) as uid \(job.owner.uid)")
        }
    }

    /// Size of the partial file, 0 when it is missing.
    func partialSize(of job: Job) async -> Int64 { await size(of: job.partialPath, as: job.owner) }

    /// Size of the file at `path` as `owner` sees it, 0 when it is missing.
    func size(of path: String, as owner: Owner) async -> Int64 {
        (try? await run(as: owner) {
            var info = stat()
            return stat(path, &info) == 0 ? Int64(info.st_size) : 0
        }) ?? 0
    }

    /// Creates (truncating) a file as `owner`, mode 0600; the caller closes the descriptor.
    func create(_ path: String, as owner: Owner) async throws -> Int32 {
        try await run(as: owner) {
            try Self.openRegular(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600, failure: "cannot create \(path) as uid \(owner.uid)")
        }
    }

    func rename(_ path: String, to target: String, as owner: Owner) async throws {
        try await run(as: owner) {
            guard Glibc.rename(path, target) == 0 else { throw FileError("cannot rename \(path) to \(target)") }
        }
    }

    /// Removes a file as `owner`; a missing file is fine.
    func remove(_ path: String, as owner: Owner) async {
        _ = try? await run(as: owner) { unlink(path) }
    }

    /// Opens a regular file for reading as `owner`; the caller closes the descriptor.
    func openForReading(_ path: String, as owner: Owner) async throws -> (fd: Int32, size: Int64) {
        try await run(as: owner) {
            let fd = try Self.openRegular(path, O_RDONLY, failure: "cannot read \(path) as uid \(owner.uid)")
            var info = stat()
            fstat(fd, &info)
            return (fd, Int64(info.st_size))
        }
    }

    /// The size of a regular file `owner` may read (checked by opening it).
    func readableSize(of path: String, as owner: Owner) async throws -> Int64 {
        let source = try await openForReading(path, as: owner)
        close(source.fd)
        return source.size
    }

    /// A small text file (at most 1 MiB) read as `owner`.
    func read(_ path: String, as owner: Owner) async throws -> String {
        try await run(as: owner) {
            let fd = try Self.openRegular(path, O_RDONLY, failure: "cannot read \(path)")
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

    /// Moves the finished partial file over the output in one step, then makes the rename durable.
    func moveIntoPlace(_ job: Job) async throws {
        try await run(as: job.owner) {
            guard Glibc.rename(job.partialPath, job.output) == 0 else { throw FileError("cannot rename the download to \(job.output)") }
            let directory = String(job.output[..<job.output.lastIndex(of: "/")!])
            let fd = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if fd >= 0 {
                fsync(fd)
                close(fd)
            }
        }
    }

    /// Removes the partial file (cancelled or failed job); a missing file is fine.
    func removePartial(of job: Job) async {
        _ = try? await run(as: job.owner) { unlink(job.partialPath) }
    }
}
