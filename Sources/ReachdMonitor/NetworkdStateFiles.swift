import Logging
import ReachdModel
import ReachdSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// systemd-networkd's state files as a source: each link's DHCPv4 lease (`leases/IFINDEX`: option 43's
/// `ANDROID_METERED`) and link file (`links/IFINDEX`: the captive-portal URI networkd ≥ 254 records),
/// followed with inotify on both directories, so a renewal or a new network is seen without polling.
///
/// networkd calls these files private data: they are parsed tolerantly (`NetworkdLease`,
/// `NetworkdLinkState`), and a file that cannot be read is "no information" with one log line. Only
/// networkd (root or systemd-network) can write there. Which directories are watched is `NetworkdWatchPlan`'s
/// decision: while one does not exist, its nearest parent is watched until it appears, and no longer after.
package final class NetworkdStateFiles: @unchecked Sendable {
    /// Where networkd keeps its state.
    package static let defaultRoot = "/run/systemd/netif"

    private static let directoryEvents = UInt32(IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
    private static let parentEvents = UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    private let root: String
    private let logger: Logger
    private let onChange: @Sendable ([Int32: NetworkdLinkFacts]) -> Void
    private let inotify: Int32
    private let thread: PollThread
    // Only touched by `start` (before the thread runs) and on the thread.
    private var watches: [Int32: String] = [:]
    private var plan: NetworkdWatchPlan
    private var facts: [Int32: NetworkdLinkFacts] = [:]
    private var problems: [Int32: String] = [:]
    private let rescans = Atomic<Int>(0)

    /// How many times every file has been read again (the start included); each costs a read of all of them.
    package var rescanCount: Int { rescans.load(ordering: .relaxed) }

    /// `onChange` gets every new map of interface index → facts (on this source's thread, and once in `start`).
    package init(root: String = NetworkdStateFiles.defaultRoot, logger: Logger,
                 onChange: @escaping @Sendable ([Int32: NetworkdLinkFacts]) -> Void) throws {
        (inotify, thread) = try InotifyEvents.descriptorAndThread()
        self.root = root
        self.logger = logger
        self.onChange = onChange
        plan = NetworkdWatchPlan(root: root, present: [])
    }

    /// Follows networkd's state files into `merger`, or nil (with a warning) when inotify cannot be used.
    package static func start(root: String, merger: SnapshotMerger, logger: Logger) -> NetworkdStateFiles? {
        do {
            let source = try NetworkdStateFiles(root: root, logger: logger) { merger.update(networkd: $0) }
            try source.start()
            return source
        } catch {
            logger.warning("networkd: its state files cannot be followed (\(error)); no DHCP metered or captive-portal information")
            return nil
        }
    }

    deinit {
        thread.stop()
        close(inotify)
    }

    /// Reads every file once (published before this returns), then follows changes on a thread of its own.
    package func start() throws {
        arm()
        rescan()
        if plan.watches["\(root)/leases"] == .files {
            logger.info("networkd: following DHCP leases and link state", metadata: ["directory": "\(root)"])
        }
        try thread.followInotify(inotify) { [unowned self] in drain() }
    }

    package func stop() { thread.stop() }

    /// Makes the watches those of the plan for the paths that exist now: adds the missing, removes the
    /// unwanted. A directory that appeared before its parent was watched is reported by nobody, and one that
    /// went away cannot be watched: while what exists changes meanwhile, it looks again (a few times at most).
    private func arm() {
        for _ in 0..<4 {
            let present = existingDirectories()
            plan = NetworkdWatchPlan(root: root, present: present)
            for (wd, path) in watches where plan.watches[path] == nil { forget(wd) }
            let watched = Set(watches.values)
            for (path, purpose) in plan.watches where !watched.contains(path) {
                let wd = inotify_add_watch(inotify, path, purpose == .files ? Self.directoryEvents : Self.parentEvents)
                if wd >= 0 { watches[wd] = path }
            }
            if existingDirectories() == present { return }
        }
    }

    /// Which of the plan's candidate paths are directories now.
    private func existingDirectories() -> Set<String> {
        Set(NetworkdWatchPlan.candidates(root: root).filter { path in
            var status = stat()
            return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
        })
    }

    /// Removes a watch; what it still reports is ignored from here on.
    private func forget(_ wd: Int32) {
        inotify_rm_watch(inotify, wd)
        watches[wd] = nil
    }

    /// Reads the pending events: a lease or link file changed (read that link again), or an awaited directory
    /// appeared, or a watched one went away, or the queue overflowed (watch again, read everything). Events
    /// of a watch removed are stale and skipped.
    private func drain() {
        var changed: Set<Int32> = []
        var everything = false
        for event in InotifyEvents.drain(inotify) {
            if event.has(IN_Q_OVERFLOW) {
                everything = true
                continue
            }
            guard let path = watches[event.watch] else { continue }
            if event.has(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) {
                forget(event.watch)
                everything = true
                continue
            }
            switch plan.reaction(to: event.name, in: path) {
            case .readLink(let index): changed.insert(index)
            case .rescan: everything = true
            case .nothing: break
            }
        }
        if everything {
            arm()
            rescan()
        } else if !changed.isEmpty {
            var updated = facts
            for index in changed { updated[index] = read(index) }
            publish(updated)
        }
    }

    /// Reads every link that has a lease or a link file.
    private func rescan() {
        rescans.add(1, ordering: .relaxed)
        var indices: Set<Int32> = []
        for name in ["leases", "links"] {
            guard let directory = opendir("\(root)/\(name)") else { continue }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
                if let index = NetworkdWatchPlan.interfaceIndex(name) { indices.insert(index) }
            }
        }
        var updated: [Int32: NetworkdLinkFacts] = [:]
        for index in indices { updated[index] = read(index) }
        publish(updated)
    }

    /// What the lease and link files of one link say; nil when they say nothing.
    private func read(_ index: Int32) -> NetworkdLinkFacts? {
        var link = NetworkdLinkFacts()
        if let bytes = SmallFile.bytes(at: "\(root)/leases/\(index)", limit: NetworkdLease.maximumSize + 1, flags: O_NOFOLLOW) {
            switch NetworkdLease.parse(bytes) {
            case .success(let lease):
                problems[index] = nil
                link.androidMetered = lease.androidMetered
            case .failure(let problem):
                if problems[index] != problem.description {
                    problems[index] = problem.description
                    logger.warning("networkd: the DHCP lease of interface \(index) cannot be read (\(problem)); no DHCP metered information for it")
                }
            }
        }
        if let bytes = SmallFile.bytes(at: "\(root)/links/\(index)", limit: NetworkdLease.maximumSize + 1, flags: O_NOFOLLOW) {
            link.captivePortal = NetworkdLinkState.captivePortal(in: bytes)
        }
        return link == NetworkdLinkFacts() ? nil : link
    }

    private func publish(_ updated: [Int32: NetworkdLinkFacts]) {
        guard updated != facts else { return }
        facts = updated
        onChange(updated)
    }
}
