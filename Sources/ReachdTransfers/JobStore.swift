import Foundation
import GRDB
import ReachdModel
import ReachdTransferModel

/// The persistent job table: SQLite through GRDB, in the state directory. Survives restarts and kill -9
/// (SQLite's write-ahead log); progress is written at checkpoints, the partial file's size is the truth on restart.
public final class JobStore: Sendable {
    let database: DatabaseQueue

    /// Opens (creating and migrating) `jobs.sqlite` in `directory`; a damaged table throws (`open` sets it aside).
    public init(directory: String) throws {
        var configuration = Configuration()
        configuration.label = "reachd-transfers.jobs"
        configuration.busyMode = .timeout(5)
        // WAL with synchronous=NORMAL: a commit survives a crash or kill -9 of the daemon (the WAL is in the
        // page cache), only a power cut can lose the last ones, which costs a transfer re-done, never a
        // corrupt file (partial files and the final rename carry the data).
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
        }
        database = try DatabaseQueue(path: directory + "/jobs.sqlite", configuration: configuration)
        try Self.checkIntact(database)
        try Self.migrator.migrate(database)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: download jobs") { db in
            try db.create(table: "job") { t in
                t.primaryKey("id", .text)
                t.column("sequence", .integer).notNull().unique()
                t.column("url", .text).notNull()
                t.column("output", .text).notNull()
                t.column("state", .text).notNull()
                t.column("priority", .text).notNull()
                t.column("allowMetered", .boolean).notNull()
                t.column("sha256", .text)
                t.column("uid", .integer).notNull()
                t.column("gid", .integer).notNull()
                t.column("groups", .text).notNull()
                t.column("bytesReceived", .integer).notNull()
                t.column("bytesTotal", .integer)
                t.column("reason", .text)
                t.column("etag", .text)
                t.column("lastModified", .text)
                t.column("attempts", .integer).notNull()
                t.column("retryAt", .integer)
                t.column("created", .integer).notNull()
                t.column("updated", .integer).notNull()
            }
        }
        migrator.registerMigration("v2: refresh jobs") { db in
            try db.alter(table: "job") { t in
                t.add(column: "refreshSeconds", .integer)
                t.add(column: "lastChecked", .integer)
                t.add(column: "nextCheck", .integer)
                t.add(column: "currentEtag", .text)
                t.add(column: "currentLastModified", .text)
            }
        }
        migrator.registerMigration("v3: credentials over plain http") { db in
            try db.alter(table: "job") { t in t.add(column: "allowInsecureAuth", .boolean).notNull().defaults(to: false) }
        }
        migrator.registerMigration("v4: uploads") { db in
            try db.alter(table: "job") { t in
                t.add(column: "kind", .text).notNull().defaults(to: "download")
                t.add(column: "method", .text)
                t.add(column: "fields", .text).notNull().defaults(to: "[]")
                t.add(column: "fileField", .text)
                t.add(column: "responseStatus", .integer)
                t.add(column: "responseBody", .text)
            }
        }
        migrator.registerMigration("v5: offline cache") { db in
            try db.create(table: "cacheEntry") { t in
                t.column("uid", .integer).notNull()
                t.column("key", .text).notNull()
                t.column("url", .text).notNull()
                t.column("file", .text).notNull()
                t.column("size", .integer).notNull()
                t.column("status", .integer).notNull()
                t.column("contentType", .text)
                t.column("etag", .text)
                t.column("lastModified", .text)
                t.column("freshUntil", .integer)
                t.column("mustRevalidate", .boolean).notNull()
                t.column("validated", .integer).notNull()
                t.column("lastUsed", .integer).notNull()
                t.primaryKey(["uid", "key"])
            }
        }
        migrator.registerMigration("v6: strong Last-Modified") { db in
            // Partial files kept by earlier versions have no proof of a strong date: they restart rather than risk a splice.
            try db.alter(table: "job") { t in t.add(column: "lastModifiedStrong", .boolean).notNull().defaults(to: false) }
        }
        migrator.registerMigration("v7: cache entries with Vary, stale-if-error and no-store") { db in
            try db.alter(table: "cacheEntry") { t in
                t.add(column: "reusable", .boolean).notNull().defaults(to: true)
                t.add(column: "varyFields", .text).notNull().defaults(to: "")
                t.add(column: "varyKey", .text).notNull().defaults(to: "")
                t.add(column: "staleIfErrorUntil", .integer)
            }
        }
        migrator.registerMigration("v8: cache eviction by last use") { db in
            try db.create(index: "cacheEntryLastUsed", on: "cacheEntry", columns: ["lastUsed"])
            try db.create(index: "cacheEntryUidLastUsed", on: "cacheEntry", columns: ["uid", "lastUsed"])
        }
        migrator.registerMigration("v9: job constraints") { db in
            // Earlier jobs have none: the metered rule, as before.
            try db.alter(table: "job") { t in t.add(column: "constraints", .text).notNull().defaults(to: "{}") }
        }
        migrator.registerMigration("v10: a job's own proxy") { db in
            try db.alter(table: "job") { t in t.add(column: "proxy", .text) }
        }
        migrator.registerMigration("v11: a job's own rate cap") { db in
            try db.alter(table: "job") { t in t.add(column: "maxRate", .integer) }
        }
        return migrator
    }

    /// What the table holds: its jobs oldest first, and the rows refused because their parts contradict their kind
    /// (written by hand or by a broken version), which stay in the table untouched.
    public struct Stored: Sendable {
        public var jobs: [Job] = []
        public var refused: [Job.RecordError] = []
    }

    /// Every job, oldest first; a row that is no job is refused alone, not the whole table.
    public func all() throws -> Stored {
        try database.read { db in
            var stored = Stored()
            for row in try Row.fetchAll(db, sql: "SELECT * FROM job ORDER BY sequence") {
                do {
                    stored.jobs.append(try Self.job(row))
                } catch let error as Job.RecordError {
                    stored.refused.append(error)
                }
            }
            return stored
        }
    }

    /// The next insertion sequence number.
    public func nextSequence() throws -> Int64 {
        try database.read { db in try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(sequence), 0) + 1 FROM job") ?? 1 }
    }

    /// Deletes jobs' rows.
    public func delete(_ ids: [String]) throws {
        try database.write { db in
            for id in ids { try db.execute(sql: "DELETE FROM job WHERE id = ?", arguments: [id]) }
        }
    }

    /// Inserts or replaces the job's row.
    public func save(_ job: Job) throws {
        let (download, upload) = (job.download, job.upload)
        let partial = download?.partial ?? Validators()
        try database.write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO job (id, sequence, url, output, state, priority, allowMetered, sha256, uid, gid, groups,
                      bytesReceived, bytesTotal, reason, etag, lastModified, attempts, retryAt, created, updated,
                      refreshSeconds, lastChecked, nextCheck, currentEtag, currentLastModified, allowInsecureAuth,
                      kind, method, fields, fileField, responseStatus, responseBody, lastModifiedStrong, constraints, proxy, maxRate)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    job.id, job.sequence, job.url, job.file, job.state.rawValue, job.priority.rawValue, job.allowMetered,
                    download?.sha256, Int64(job.owner.uid), Int64(job.owner.gid), job.owner.groups.map(String.init).joined(separator: ","),
                    job.bytesMoved, job.bytesTotal, job.reason, partial.etag, partial.lastModified,
                    job.attempts, job.retryAt?.microseconds, job.created.microseconds, job.updated.microseconds,
                    download?.refreshSeconds, download?.lastChecked?.microseconds, download?.nextCheck?.microseconds,
                    download?.installed.etag, download?.installed.lastModified, job.allowInsecureAuth,
                    job.kind.name.rawValue, upload?.form.method.rawValue, Self.encode(upload?.form.fields ?? []), upload?.form.fileField,
                    upload?.answer?.status, upload?.answer?.body, partial.lastModifiedIsStrong, Self.encode(job.constraints), job.proxy, job.maxRate,
                ]
            )
        }
    }

    private static func encode(_ fields: [FormField]) -> String {
        String(decoding: (try? JSONEncoder().encode(fields)) ?? Data("[]".utf8), as: UTF8.self)
    }

    private static func encode(_ constraints: JobConstraints) -> String {
        String(decoding: (try? JSONEncoder().encode(constraints)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// The job in `row`; a row whose parts contradict its kind (an upload kept fresh, a PUT with form fields) is refused.
    private static func job(_ row: Row) throws -> Job {
        let groups: String = row["groups"]
        let owner = Owner(
            uid: UInt32(row["uid"] as Int64), gid: UInt32(row["gid"] as Int64),
            groups: groups.split(separator: ",").compactMap { UInt32($0) }
        )
        let id: String = row["id"]
        let kind: Job.Kind
        switch JobKind(rawValue: row["kind"]) ?? .download {
        case .download:
            guard row["method"] as String? == nil, row["fileField"] as String? == nil, row["responseStatus"] as Int? == nil else {
                throw Job.RecordError("job \(id): a download has no upload method, file field or answer")
            }
            kind = .download(Job.Download(
                output: row["output"], bytesOnDisk: row["bytesReceived"], sha256: row["sha256"],
                partial: Validators(etag: row["etag"], lastModified: row["lastModified"], lastModifiedIsStrong: row["lastModifiedStrong"]),
                installed: Validators(etag: row["currentEtag"], lastModified: row["currentLastModified"]),
                lastChecked: (row["lastChecked"] as Int64?).map(Timestamp.init(microseconds:)), refreshSeconds: row["refreshSeconds"],
                nextCheck: (row["nextCheck"] as Int64?).map(Timestamp.init(microseconds:))
            ))
        case .upload:
            guard row["refreshSeconds"] as Int64? == nil, row["sha256"] as String? == nil else {
                throw Job.RecordError("job \(id): an upload is not kept fresh and has no digest")
            }
            let fields = (try? JSONDecoder().decode([FormField].self, from: Data((row["fields"] as String).utf8))) ?? []
            let form: Job.Upload.Form
            do {
                form = try Job.Upload.Form(method: (row["method"] as String?).flatMap(UploadMethod.init(rawValue:)) ?? .put,
                                           fields: fields, fileField: row["fileField"])
            } catch {
                throw Job.RecordError("job \(id): \(error.description)")
            }
            let answer = (row["responseStatus"] as Int?).map { Job.Upload.Answer(status: $0, body: row["responseBody"]) }
            kind = .upload(Job.Upload(source: row["output"], bytesSent: row["bytesReceived"], form: form, answer: answer))
        }
        var job = Job(id: id, sequence: row["sequence"], url: row["url"], kind: kind, allowMetered: row["allowMetered"],
                      priority: Priority(rawValue: row["priority"]) ?? .normal, allowInsecureAuth: row["allowInsecureAuth"],
                      constraints: (try? JSONDecoder().decode(JobConstraints.self, from: Data((row["constraints"] as String).utf8)))
                          ?? JobConstraints(),
                      owner: owner, created: Timestamp(microseconds: row["created"]))
        job.state = JobState(rawValue: row["state"]) ?? .queued
        job.bytesTotal = row["bytesTotal"]
        job.reason = row["reason"]
        job.proxy = row["proxy"]
        job.maxRate = row["maxRate"]
        job.attempts = row["attempts"]
        job.retryAt = (row["retryAt"] as Int64?).map(Timestamp.init(microseconds:))
        job.updated = Timestamp(microseconds: row["updated"])
        return job
    }
}
