import Logging
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// At start, before any client is served: the system instance brings per-uid cache directories of an older
/// layout (`CacheLayout.needsMigration`: those the root-run version left, 0700, bodies 0600 under names
/// derived from the URL) to its own. Their bodies get random names and mode 0644, with their entries; files
/// no entry names are removed; then the directory is opened (0711). Without this, every client who cached
/// before the upgrade would be told a body it cannot open (EACCES).
enum CacheRepair {
    static func run(directory: String, shared: Bool, store: JobStore, logger: Logger) {
        guard shared else { return }
        for name in entries(of: directory) {
            guard let uid = UInt32(name) else { continue }
            let path = "\(directory)/\(name)"
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR,
                  CacheLayout.needsMigration(directoryMode: UInt32(info.st_mode), shared: shared) else { continue }
            do {
                try migrate(path, uid: uid, store: store, logger: logger)
            } catch {
                logger.error("cache: \(path) could not be brought to the current layout: \(error)")
            }
        }
    }

    private static func migrate(_ path: String, uid: UInt32, store: JobStore, logger: Logger) throws {
        let stored = try store.cacheEntries(uid: uid)
        let migration = CacheLayout.migration(of: path, names: entries(of: path), entries: stored.map { ($0.key, $0.file) })
        let byKey = Dictionary(stored.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        var random = SystemRandomNumberGenerator()
        for key in migration.moved {
            guard var entry = byKey[key] else { continue }
            let file = "\(path)/\(CacheLayout.bodyName(using: &random))"
            guard rename(entry.file, file) == 0 else { throw FileError("cannot rename \(entry.file)") }
            let fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0, fchmod(fd, mode_t(CacheLayout.bodyMode(shared: true))) == 0 else {
                if fd >= 0 { close(fd) }
                throw FileError("cannot make \(file) readable")
            }
            close(fd)
            entry.file = file
            try store.saveCacheEntry(entry)
        }
        for key in migration.missing { try store.deleteCacheEntry(uid: uid, key: key) }
        for name in migration.leftovers { unlink("\(path)/\(name)") }
        guard chmod(path, mode_t(CacheLayout.directoryMode(shared: true))) == 0 else { throw FileError("cannot change the mode of \(path)") }
        logger.notice("cache: \(path) brought to the current layout (\(migration.moved.count) bodies kept, \(migration.leftovers.count) files removed)")
    }

    /// The names in a directory (without `.` and `..`); none when it cannot be read.
    private static func entries(of path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
