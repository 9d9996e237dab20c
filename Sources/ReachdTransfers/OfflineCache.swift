import Crypto
import Logging
import NIOHTTP1
import ReachdModel
import ReachdProtocol
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// `fetch`: a URL's body through the cache. From the network when the route to its host allows it (a
/// conditional request when there is a copy), else the copy, saying how old it is and why. Bodies are files
/// in a directory per user; entries are in SQLite; least recently used entries are dropped after a fetch, off
/// its path, to keep the cache within its bounds (`CacheEviction.Limits`: bytes, entries, entries per uid).
/// Concurrent fetches of one URL by one user share one request.
///
/// A user's own instance keeps its files to itself (0700, 0600). The system instance cannot hand a file to its
/// client (no CAP_CHOWN), so a body is 0644 under a random 128-bit name, in directories others may pass
/// through but not list (0711): only the client told the name can open it.
actor OfflineCache {
    private let store: JobStore
    private let files: UserFiles
    private let fetcher: Fetcher
    private let hosts: any HostVerdicts
    private let credentials: CredentialSource
    private let directory: String
    /// Whether clients other than the daemon's own user read the bodies (the system instance).
    private let shared: Bool
    private let limits: CacheEviction.Limits
    private let threshold: Int64
    /// The instance's proxies (`[downloads] proxy`, else its environment).
    private let proxies: ProxySettings?
    private let desktopProxies: DesktopProxyResolver?
    /// The instance's caps, which fetches share with its jobs.
    private let instanceRate: SharedRate?
    private let meteredRate: SharedRate?
    private let metrics: TransferMetrics?
    private let logger: Logger
    private var inflight: [String: Task<Result<FetchResult, ProtocolError>, Never>] = [:]

    init(store: JobStore, files: UserFiles, fetcher: Fetcher, hosts: any HostVerdicts, credentials: CredentialSource,
         directory: String, shared: Bool, limits: CacheEviction.Limits, threshold: Int64, proxies: ProxySettings? = nil,
         desktopProxies: DesktopProxyResolver? = nil,
         instanceRate: SharedRate? = nil, meteredRate: SharedRate? = nil, metrics: TransferMetrics? = nil, logger: Logger) {
        self.proxies = proxies
        self.desktopProxies = desktopProxies
        self.instanceRate = instanceRate
        self.meteredRate = meteredRate
        self.metrics = metrics
        self.shared = shared
        self.store = store
        self.files = files
        self.fetcher = fetcher
        self.hosts = hosts
        self.credentials = credentials
        self.directory = directory
        self.limits = limits
        self.threshold = threshold
        self.logger = logger
    }

    /// `url` from the cache or the network; `proxy`: the request's own (`Job.proxy`), nil: the instance's.
    func fetch(_ url: String, owner: Owner, proxy: String? = nil) async throws(ProtocolError) -> FetchResult {
        _ = try TransferScheduler.admit(url: url)
        guard let key = CacheKey.key(method: "GET", url: url) else { throw ProtocolError(.invalidURL, "invalid URL \"\(url.prefix(200))\"") }
        var way = JobProxy(asked: proxy, instance: proxies)
        if proxy == nil, let desktopProxies { way.desktop = await desktopProxies.lookup(url) }
        // The route to the proxy, when there is one, decides what the fetch may cost.
        guard let host = way.gatingHost(for: url) else { throw ProtocolError(.invalidURL, "invalid URL \"\(url.prefix(200))\"") }
        let flight = "\(owner.uid) \(key) \(way.proxy(for: url)?.url ?? "")"
        let task: Task<Result<FetchResult, ProtocolError>, Never>
        if let running = inflight[flight] {
            task = running
        } else {
            task = Task { await self.resolve(url: url, key: key, host: host, way: way, owner: owner) }
            inflight[flight] = task
        }
        let result = await task.value
        inflight[flight] = nil
        if case .failure = result { metrics?.fetched(.failed) }
        return try result.get()
    }

    private func resolve(url: String, key: String, host: String, way: JobProxy, owner: Owner) async -> Result<FetchResult, ProtocolError> {
        let now = Timestamp.now()
        let credentials = await credentials.credentials(for: url)
        let entry = (try? store.cacheEntry(uid: owner.uid, key: key)).flatMap { Self.usable($0, credentials: credentials) }
        let verdict = await hosts.verdict(for: host).verdict
        let source = CacheSource.decide(host: host, verdict: verdict, cachedSize: entry?.size, freshness: entry?.freshness,
                                        threshold: threshold, now: now)
        switch source {
        case .fail(let reason):
            return .failure(ProtocolError(.unavailable, reason))
        case .cache(let reason):
            guard let entry else { return .failure(ProtocolError(.unavailable, reason)) }
            metrics?.fetched(entry.freshness.isFresh(at: now) ? .hit : .stale)
            return .success(served(entry, reason: reason, now: now))
        case .network(let limit):
            return await network(url: url, key: key, owner: owner, entry: entry, limit: limit, credentials: credentials, way: way,
                                 metered: verdict.metered, now: now)
        }
    }

    /// The stored entry if it may answer this request: reusable, and the request sends the values the
    /// response varied on.
    private static func usable(_ entry: CacheEntry, credentials: Credentials?) -> CacheEntry? {
        guard entry.reusable, varyKey(CacheVary(entry.varyFields), credentials: credentials) == entry.varyKey else { return nil }
        return entry
    }

    /// A digest of the request's values of the varied fields ("" when the response varies on none): they may
    /// include the Authorization header, which is not stored.
    private static func varyKey(_ vary: CacheVary, credentials: Credentials?) -> String {
        guard !vary.fields.isEmpty else { return "" }
        return hex(SHA256.hash(data: Array(vary.selectingText(of: RequestFields.sent(credentials: credentials)).utf8)))
    }

    private static func hex(_ digest: some Sequence<UInt8>) -> String { digest.map { String(format: "%02x", $0) }.joined() }

    /// A list-valued header's lines as one value (a server may split `Cache-Control` or `Vary` over several).
    private static func list(_ headers: HTTPHeaders, _ name: String) -> String? {
        let lines = headers[name]
        return lines.isEmpty ? nil : lines.joined(separator: ", ")
    }

    private func network(url: String, key: String, owner: Owner, entry: CacheEntry?, limit: Int64?, credentials: Credentials?,
                         way: JobProxy, metered: Bool, now: Timestamp) async -> Result<FetchResult, ProtocolError> {
        let userDirectory = "\(directory)/\(owner.uid)"
        do {
            try makeUserDirectory(userDirectory)
        } catch {
            return .failure(ProtocolError(.internalError, "\(error)"))
        }
        var random = SystemRandomNumberGenerator()
        let name = CacheLayout.bodyName(using: &random)
        let file = "\(userDirectory)/\(name)", temporary = "\(userDirectory)/.\(name).tmp"
        let body: PartialFile
        do {
            body = try await files.create(temporary, mode: mode_t(CacheLayout.bodyMode(shared: shared)))
        } catch {
            return .failure(ProtocolError(.internalError, "\(error)"))
        }
        // A body larger than the whole cache cannot be kept: the capacity bounds what a server can make us write.
        let bound = min(limit ?? limits.capacity, limits.capacity)
        let source = self.credentials
        let lease = await fetcher.lease(way, lendsNetrc: !shared) { await source.credentials(forHost: $0) }
        let pacer = RatePacer(bytesPerSecond: nil, metered: metered, instance: instanceRate, meteredInstance: meteredRate,
                              longestWait: fetcher.readTimeout / 2)
        let outcome = await fetcher.fetchToFile(url, cached: entry?.validators, limit: bound, file: body, credentials: credentials, via: lease,
                                                pacer: pacer)
        fetcher.release(lease)
        if case .stored = outcome {} else { await files.remove(temporary) }
        switch outcome {
        case .notModified(let headers):
            guard var entry else { return .failure(ProtocolError(.unavailable, "the server answered 304 to an unconditional request")) }
            entry.freshness = Self.freshness(CacheControl(Self.list(headers, "Cache-Control")), headers, now: now)
            entry.validated = now
            try? store.saveCacheEntry(entry)
            metrics?.fetched(.revalidated)
            var result = served(entry, reason: nil, now: now)
            result.source = "network"
            return .success(result)
        case .stored(let status, let headers, let size):
            do {
                try await body.moveIntoPlace(at: file)
            } catch {
                await files.remove(temporary)
                return .failure(ProtocolError(.internalError, "\(error)"))
            }
            let directives = CacheControl(Self.list(headers, "Cache-Control"))
            let vary = CacheVary(Self.list(headers, "Vary"))
            let refusal = CacheAdmission.refusal(directives, vary: vary)
            if let refusal { logger.debug("cache: \(url) is handed over once and not kept: \(refusal)") }
            let stored = CacheEntry(
                uid: owner.uid, key: key, url: url, file: file, size: size, status: status,
                contentType: headers.first(name: "Content-Type"),
                validators: Validators(headers: headers),
                freshness: Self.freshness(directives, headers, now: now),
                reusable: refusal == nil, varyFields: vary.fields.joined(separator: ", "),
                varyKey: Self.varyKey(vary, credentials: credentials),
                validated: now, lastUsed: now
            )
            let replaced = try? store.cacheEntry(uid: owner.uid, key: key)
            do {
                try store.saveCacheEntry(stored)
                if let replaced, replaced.file != file { await files.remove(replaced.file) }
            } catch {
                logger.error("cache: the entry for \(url) could not be written: \(error)")
            }
            Task { await self.evict(after: owner.uid) }
            metrics?.fetched(.miss)
            var result = served(stored, reason: nil, now: now)
            result.source = "network"
            return .success(result)
        case .answered(let status, let headers):
            let errorDirectives = CacheControl(Self.list(headers, "Cache-Control"))
            if let entry, let why = CacheSource.standIn(status: status, errorDirectives: errorDirectives, copy: entry.freshness,
                                                       metered: metered, now: now) {
                metrics?.fetched(.stale)
                return .success(served(entry, reason: why, now: now))
            }
            return .failure(ProtocolError(.unavailable, "the server answered \(status)"))
        case .tooLarge(let size):
            let what = size.map { "the body (\($0) bytes)" } ?? "the body"
            let why = bound < (limit ?? .max) ? "is larger than the cache (\(limits.capacity) bytes)"
                                              : "is too large for the metered route (over \(threshold) bytes)"
            guard let entry else { return .failure(ProtocolError(.unavailable, "not cached, and \(what) \(why)")) }
            metrics?.fetched(.stale)
            return .success(served(entry, reason: "\(what) \(why)", now: now))
        case .failed(let reason):
            guard let entry, !entry.freshness.mustRevalidate else {
                return .failure(ProtocolError(.unavailable, "not cached, and the network failed: \(reason)"))
            }
            metrics?.fetched(.stale)
            return .success(served(entry, reason: "the network failed: \(reason)", now: now))
        }
    }

    /// How long a response received `now` stays fresh, from its Cache-Control directives (read once by the
    /// caller, which also needs them for storing), Expires, Date and Age.
    private static func freshness(_ directives: CacheControl, _ headers: HTTPHeaders, now: Timestamp) -> CacheFreshness {
        CacheFreshness(directives, expires: headers.first(name: "Expires"), date: headers.first(name: "Date"),
                       age: headers.first(name: "Age"), now: now)
    }

    /// The entry as a result, its use recorded.
    private func served(_ entry: CacheEntry, reason: String?, now: Timestamp) -> FetchResult {
        try? store.touchCacheEntry(uid: entry.uid, key: entry.key, at: now)
        return FetchResult(url: entry.url, source: "cache", reason: reason, age: (now.microseconds - entry.validated.microseconds) / 1_000_000,
                           status: entry.status, contentType: entry.contentType, size: entry.size, body: entry.file)
    }

    /// Drops least recently used entries until `uid`, and the cache in all, fit their bounds (counted by
    /// SQLite: only the oldest entries are loaded, and only when a bound is exceeded).
    private func evict(after uid: UInt32) async {
        guard let usage = try? store.cacheUsage(uid: uid) else { return }
        let excess = CacheEviction.userExcess(held: usage.user, limits: limits)
        if excess > 0, let oldest = try? store.oldestCacheEntries(uid: uid, limit: excess), await !drop(oldest) { return }
        while let usage = try? store.cacheUsage(uid: uid).all, CacheEviction.isOver(usage, limits: limits),
              let oldest = try? store.oldestCacheEntries(limit: max(usage.entries - limits.entries, 64)) {
            let victims = Set(CacheEviction.victims(oldestFirst: oldest.map(Self.evictable), usage: usage, limits: limits))
            guard !victims.isEmpty, await drop(oldest.filter { victims.contains(Self.evictable($0)) }) else { return }
        }
    }

    private static func evictable(_ entry: CacheEntry) -> CacheEviction.Entry {
        CacheEviction.Entry(uid: entry.uid, key: entry.key, size: entry.size, lastUsed: entry.lastUsed)
    }

    /// Deletes the entries and their bodies; false when the store could not be written.
    private func drop(_ entries: [CacheEntry]) async -> Bool {
        for entry in entries {
            guard (try? store.deleteCacheEntry(uid: entry.uid, key: entry.key)) != nil else { return false }
            await files.remove(entry.file)
            logger.debug("cache: evicted \(entry.url) (\(entry.size) bytes)")
        }
        return true
    }

    /// `DIR/UID`: closed to everyone but the daemon's user, or (system instance) passable but not listable.
    private func makeUserDirectory(_ path: String) throws {
        guard mkdir(path, mode_t(CacheLayout.directoryMode(shared: shared))) == 0 || errno == EEXIST else { throw FileError("cannot create the cache directory \(path)") }
    }
}
