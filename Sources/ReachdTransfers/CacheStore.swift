import GRDB
import ReachdModel
import ReachdTransferModel

/// One cached response: its body file and what the server said about it.
struct CacheEntry: Sendable {
    var uid: UInt32
    var key: String
    var url: String
    var file: String
    var size: Int64
    var status: Int
    var contentType: String?
    var validators: Validators
    var freshness: CacheFreshness
    /// false: handed to its caller once (`no-store`, `Vary: *`) and never served again; kept only until
    /// replaced or evicted.
    var reusable: Bool
    /// The request fields the response varies on (comma-separated), and a digest of the values the request sent.
    var varyFields: String
    var varyKey: String
    /// When the server last sent or confirmed the body.
    var validated: Timestamp
    var lastUsed: Timestamp
}

/// The offline cache's entries, in the job store's SQLite database (table `cacheEntry`).
extension JobStore {
    func cacheEntry(uid: UInt32, key: String) throws -> CacheEntry? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM cacheEntry WHERE uid = ? AND key = ?", arguments: [Int64(uid), key]).map(Self.entry)
        }
    }

    func saveCacheEntry(_ entry: CacheEntry) throws {
        try database.write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO cacheEntry (uid, key, url, file, size, status, contentType, etag, lastModified,
                      freshUntil, mustRevalidate, staleIfErrorUntil, reusable, varyFields, varyKey, validated, lastUsed)
                      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    Int64(entry.uid), entry.key, entry.url, entry.file, entry.size, entry.status, entry.contentType,
                    entry.validators.etag, entry.validators.lastModified, entry.freshness.freshUntil?.microseconds,
                    entry.freshness.mustRevalidate, entry.freshness.staleIfErrorUntil?.microseconds, entry.reusable,
                    entry.varyFields, entry.varyKey, entry.validated.microseconds, entry.lastUsed.microseconds,
                ]
            )
        }
    }

    func touchCacheEntry(uid: UInt32, key: String, at time: Timestamp) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE cacheEntry SET lastUsed = ? WHERE uid = ? AND key = ?", arguments: [time.microseconds, Int64(uid), key])
        }
    }

    /// What the whole cache holds, and how many entries `uid` holds: counted by SQLite, no entry loaded.
    func cacheUsage(uid: UInt32) throws -> (all: CacheEviction.Usage, user: Int) {
        try database.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT COUNT(*), COALESCE(SUM(size), 0), COALESCE(SUM(uid = ?), 0) FROM cacheEntry",
                                       arguments: [Int64(uid)])
            return (CacheEviction.Usage(entries: row?[0] ?? 0, bytes: row?[1] ?? 0), row?[2] ?? 0)
        }
    }

    /// The entries of `uid`.
    func cacheEntries(uid: UInt32) throws -> [CacheEntry] {
        try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM cacheEntry WHERE uid = ?", arguments: [Int64(uid)]).map(Self.entry) }
    }

    /// The `limit` least recently used entries (of `uid`, or of everyone), oldest first.
    func oldestCacheEntries(uid: UInt32? = nil, limit: Int) throws -> [CacheEntry] {
        try database.read { db in
            let filter = uid == nil ? "" : "WHERE uid = ?"
            let arguments: StatementArguments = uid.map { [Int64($0), limit] } ?? [limit]
            return try Row.fetchAll(db, sql: "SELECT * FROM cacheEntry \(filter) ORDER BY lastUsed, uid, key LIMIT ?", arguments: arguments)
                .map(Self.entry)
        }
    }

    func deleteCacheEntry(uid: UInt32, key: String) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM cacheEntry WHERE uid = ? AND key = ?", arguments: [Int64(uid), key])
        }
    }

    private static func entry(_ row: Row) -> CacheEntry {
        CacheEntry(
            uid: UInt32(row["uid"] as Int64), key: row["key"], url: row["url"], file: row["file"], size: row["size"],
            status: row["status"], contentType: row["contentType"],
            validators: Validators(etag: row["etag"], lastModified: row["lastModified"]),
            freshness: CacheFreshness(freshUntil: (row["freshUntil"] as Int64?).map(Timestamp.init(microseconds:)),
                                      mustRevalidate: row["mustRevalidate"],
                                      staleIfErrorUntil: (row["staleIfErrorUntil"] as Int64?).map(Timestamp.init(microseconds:))),
            reusable: row["reusable"], varyFields: row["varyFields"], varyKey: row["varyKey"],
            validated: Timestamp(microseconds: row["validated"]), lastUsed: Timestamp(microseconds: row["lastUsed"])
        )
    }
}
