import Foundation
import GRDB
import ReachdModel
#if canImport(Glibc)
import Glibc
#endif

extension JobStore {
    /// Opens the job table in `directory`. One SQLite says is damaged (not a database, corrupt, failing its quick check)
    /// is set aside, never deleted: `jobs.sqlite` and its `-wal` and `-shm` are renamed to `jobs.sqlite.damaged-TIME`,
    /// and a fresh table is made. Returns the store and where the damaged table went, if it did.
    public static func open(directory: String, now: Timestamp = .now()) throws -> (store: JobStore, setAside: String?) {
        do {
            return (try JobStore(directory: directory), nil)
        } catch let error as DatabaseError where [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode) {
            let aside = try setAside(in: directory, at: now)
            return (try JobStore(directory: directory), aside)
        }
    }

    /// SQLite's quick check of every page: a damaged table throws `SQLITE_CORRUPT` with what it found.
    static func checkIntact(_ database: DatabaseQueue) throws {
        let findings = try database.read { try String.fetchAll($0, sql: "PRAGMA quick_check") }
        guard findings == ["ok"] else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: findings.prefix(3).joined(separator: "; "))
        }
    }

    /// Renames the table's files to a name no file has yet; the new path of the table.
    private static func setAside(in directory: String, at time: Timestamp) throws -> String {
        let table = directory + "/jobs.sqlite"
        let stamp = "\(time)".prefix(19).filter { $0.isNumber || $0 == "T" } + "Z"
        var aside = "\(table).damaged-\(stamp)"
        var number = 1
        while ["", "-wal", "-shm"].contains(where: { access(aside + $0, F_OK) == 0 }) {
            number += 1
            aside = "\(table).damaged-\(stamp)-\(number)"
        }
        for suffix in ["-wal", "-shm", ""] {
            guard rename(table + suffix, aside + suffix) == 0 || errno == ENOENT else {
                throw DatabaseError(resultCode: .SQLITE_CANTOPEN,
                                    message: "cannot set the damaged job table \(table)\(suffix) aside: \(String(cString: strerror(errno)))")
            }
        }
        return aside
    }
}
