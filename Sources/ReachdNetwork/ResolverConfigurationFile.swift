import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// What the resolver's configuration (`resolv.conf`) says that a path needs: whether it names a name server.
/// Pure.
enum ResolverConfiguration {
    /// Where the C library reads it.
    static let systemPath = "/etc/resolv.conf"
    /// Bytes read at most: the C library reads three name servers and a few options, so anything real fits.
    static let maximumSize = 64 * 1024

    /// A line whose first word is `nameserver`, followed by an address (comments start with `#` or `;`).
    static func namesNameServer<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        bytes.split(separator: UInt8(ascii: "\n")).contains { line in
            let words = line.split { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }
            return words.count >= 2 && words[0].elementsEqual("nameserver".utf8)
        }
    }

    /// Whether the file at `path` names a name server (no file: no name server). A FIFO does not block the
    /// read (`O_NONBLOCK`); a file longer than `maximumSize` is judged by its beginning.
    static func namesNameServer(at path: String) -> Bool {
        guard let bytes = SmallFile.bytes(at: path, limit: maximumSize, flags: O_NONBLOCK) else { return false }
        return namesNameServer(bytes.prefix(maximumSize))
    }
}

/// Follows the resolver's configuration file with inotify on a `PollThread`, so that a change to the file
/// alone (a name server added or removed) is seen at once, as `NetworkdStateFiles` follows networkd's files.
///
/// The file's directory is watched for the file's name (it is often replaced by a rename), and where the file
/// is a symbolic link (systemd-resolved's `/etc/resolv.conf` → `/run/systemd/resolve/stub-resolv.conf`), so is
/// each link's target, up to `maximumLinks`. A directory that does not exist yet is waited for in its nearest
/// existing parent. Any relevant event re-arms the watches and reads the file again.
final class ResolverConfigurationFile: @unchecked Sendable {
    /// Symbolic links followed from the file towards its target.
    static let maximumLinks = 8

    /// For a directory holding a watched name, and for a parent waiting for a directory to appear (one mask,
    /// since a directory can be both).
    private static let events = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
    )

    private let path: String
    private let onChange: @Sendable (Bool) -> Void
    private let inotify: Int32
    private let thread: PollThread
    // Only touched by `start` (before the thread runs) and on the thread.
    /// Watched directories: the names in each that matter.
    private var watches: [Int32: Set<String>] = [:]
    private var nameServer: Bool?

    /// `onChange` gets whether the file names a name server: once in `start`, then at each change (on this
    /// source's thread).
    init(path: String = ResolverConfiguration.systemPath, onChange: @escaping @Sendable (Bool) -> Void) throws(SystemCallError) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw SystemCallError(call: "inotify_init1", errno: .current) }
        do {
            thread = try PollThread()
        } catch {
            close(fd)
            throw error
        }
        inotify = fd
        self.path = path
        self.onChange = onChange
    }

    deinit {
        thread.stop()
        close(inotify)
    }

    /// Reads the file once (published before this returns), then follows it on a thread of its own.
    func start() throws(SystemCallError) {
        arm()
        read()
        try thread.followInotify(inotify) { [unowned self] in drain() }
    }

    /// Stops following; `onChange` is not called after this returns. Never on this source's own thread.
    func stop() { thread.stop() }

    /// Watches the directory of the file and of every link target on the way (or the nearest existing parent
    /// of one that is missing); watches no longer needed are removed. A directory made, or a link changed,
    /// between looking and watching would be missed, so the watches are armed again until nothing moved
    /// meanwhile (up to `maximumLinks` times; a later event arms them again anyway).
    private func arm() {
        for _ in 0...Self.maximumLinks {
            let chain = Self.chain(from: path)
            var wanted: [Int32: Set<String>] = [:]
            var awaited: [String] = []
            for (directory, name) in chain {
                if let wd = Self.watch(inotify, directory) {
                    wanted[wd, default: []].insert(name)
                } else if let (parent, child) = nearestParent(of: directory), let wd = Self.watch(inotify, parent) {
                    wanted[wd, default: []].insert(child)
                    awaited.append(parent + "/" + child)
                }
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
            read()
        }
    }

    private func read() {
        let now = ResolverConfiguration.namesNameServer(at: path)
        guard now != nameServer else { return }
        nameServer = now
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

    private static func watch(_ inotify: Int32, _ directory: String) -> Int32? {
        let wd = inotify_add_watch(inotify, directory, events)
        return wd >= 0 ? wd : nil
    }
}
