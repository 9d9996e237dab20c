#if canImport(Glibc)
import Glibc
#endif

/// Follows a file that may be replaced, linked elsewhere or not exist yet (the resolver's configuration, the
/// local time zone's file) with inotify on a `PollThread`: what `read` makes of it is published at once when it
/// changes, as `NetworkdStateFiles` follows networkd's files.
///
/// The file's directory is watched for the file's name (it is often replaced by a rename), and where the file
/// is a symbolic link (systemd-resolved's `/etc/resolv.conf` → `/run/systemd/resolve/stub-resolv.conf`), so is
/// each link's target, up to `maximumLinks`. A directory that does not exist yet is waited for in its nearest
/// existing parent. The file itself is watched too, for a write seen only there (a file bind-mounted over the
/// path). Any relevant event re-arms the watches and reads the file again.
package final class FollowedFile<Value: Equatable & Sendable>: @unchecked Sendable {
    /// Symbolic links followed from the file towards its target.
    static var maximumLinks: Int { 8 }

    /// For a directory holding a watched name, and for a parent waiting for a directory to appear (one mask,
    /// since a directory can be both).
    private static var directoryEvents: UInt32 {
        UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
    }
    /// For the file itself: its events carry no name, which stands for "the file" among a watch's names.
    private static var fileEvents: UInt32 { UInt32(IN_CLOSE_WRITE) }

    private let path: String
    private let read: @Sendable (String) -> Value
    private let onChange: @Sendable (Value) -> Void
    private let inotify: Int32
    private let thread: PollThread
    // Only touched by `start` (before the thread runs) and on the thread.
    /// Watched directories: the names in each that matter.
    private var watches: [Int32: Set<String>] = [:]
    private var value: Value?

    /// `read` makes a value of the file at a path (one that does not exist included); `onChange` gets it once in
    /// `start`, then each time it changes (on this source's thread).
    package init(path: String, read: @escaping @Sendable (String) -> Value, onChange: @escaping @Sendable (Value) -> Void) throws(SystemCallError) {
        (inotify, thread) = try InotifyEvents.descriptorAndThread()
        self.path = path
        self.read = read
        self.onChange = onChange
    }

    deinit {
        thread.stop()
        close(inotify)
    }

    /// Reads the file once (published before this returns), then follows it on a thread of its own.
    package func start() throws(SystemCallError) {
        arm()
        publish()
        try thread.followInotify(inotify) { [unowned self] in drain() }
    }

    /// Stops following; `onChange` is not called after this returns. Never on this source's own thread.
    package func stop() { thread.stop() }

    /// Watches the directory of the file and of every link target on the way (or the nearest existing parent
    /// of one that is missing), and the file at the end; watches no longer needed are removed. A directory made,
    /// or a link changed, between looking and watching would be missed, so the watches are armed again until
    /// nothing moved meanwhile (up to `maximumLinks` times; a later event arms them again anyway).
    private func arm() {
        for _ in 0...Self.maximumLinks {
            let chain = Self.chain(from: path)
            var wanted: [Int32: Set<String>] = [:]
            var awaited: [String] = []
            for (directory, name) in chain {
                if let wd = Self.watch(inotify, directory, Self.directoryEvents) {
                    wanted[wd, default: []].insert(name)
                    continue
                }
                // Only a missing directory is awaited: one that cannot be watched (EACCES, no watches left) stays so.
                let missing = errno == ENOENT || errno == ENOTDIR
                if let (parent, child) = nearestParent(of: directory), let wd = Self.watch(inotify, parent, Self.directoryEvents) {
                    wanted[wd, default: []].insert(child)
                    if missing { awaited.append(parent + "/" + child) }
                }
            }
            if let (directory, name) = chain.last, let wd = Self.watch(inotify, directory + "/" + name, Self.fileEvents) {
                wanted[wd, default: []].insert("")
            }
            for wd in watches.keys where wanted[wd] == nil { inotify_rm_watch(inotify, wd) }
            watches = wanted
            let settled = awaited.allSatisfy { access($0, F_OK) != 0 }
                && Self.chain(from: path).elementsEqual(chain) { $0 == $1 }
            if settled { return }
        }
    }

    /// The nearest existing ancestor of `directory` that can be watched, and the name in it on the way down.
    private func nearestParent(of directory: String) -> (String, String)? {
        var child = directory
        while let (parent, name) = Self.split(child), parent != child {
            if access(parent, F_OK) == 0 { return (parent, name) }
            child = parent
        }
        return nil
    }

    /// Reads the pending events; one that concerns a watched name (or a watched directory itself, or an
    /// overflow) re-arms and reads the file again.
    private func drain() {
        var relevant = false
        for event in InotifyEvents.drain(inotify) {
            if event.has(IN_Q_OVERFLOW) {
                relevant = true
            } else if let names = watches[event.watch] {
                if event.has(IN_IGNORED) { watches[event.watch] = nil }
                relevant = relevant || names.contains(String(decoding: event.name, as: UTF8.self))
                    || event.has(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)
            }
            // Other events: a watch `arm` removed (its IN_IGNORED), or another name in a watched directory.
        }
        if relevant {
            arm()
            publish()
        }
    }

    private func publish() {
        let now = read(path)
        guard now != value else { return }
        value = now
        onChange(now)
    }

    /// `path`'s directory and name, then each symbolic link's target's, up to `maximumLinks` links.
    private static func chain(from path: String) -> [(directory: String, name: String)] {
        var result: [(String, String)] = []
        var current = path
        for _ in 0...maximumLinks {
            guard let (directory, name) = split(current) else { break }
            result.append((directory, name))
            guard let target = linkTarget(current) else { break }
            current = target.hasPrefix("/") ? target : directory + "/" + target
        }
        return result
    }

    /// The directory (`/` for the root) and last name of an absolute or relative path; nil for a path
    /// without a name.
    private static func split(_ path: String) -> (String, String)? {
        let trimmed = path.hasSuffix("/") ? String(path.dropLast()) : path
        guard let slash = trimmed.lastIndex(of: "/") else { return trimmed.isEmpty ? nil : (".", trimmed) }
        let name = String(trimmed[trimmed.index(after: slash)...])
        guard !name.isEmpty else { return nil }
        let directory = String(trimmed[..<slash])
        return (directory.isEmpty ? "/" : directory, name)
    }

    /// What the symbolic link at `path` points to; nil when it is none.
    private static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        let n = readlink(path, &buffer, buffer.count)
        guard n > 0, n < buffer.count else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func watch(_ inotify: Int32, _ path: String, _ events: UInt32) -> Int32? {
        let wd = inotify_add_watch(inotify, path, events)
        return wd >= 0 ? wd : nil
    }
}
