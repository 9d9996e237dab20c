/// Which directories `NetworkdStateFiles` watches, from which of its paths exist, and what an event in
/// one of them asks for. A pure value.
///
/// `leases/` and `links/` are watched for their files once they exist. While one is missing, the nearest
/// existing parent (networkd's root, else the root's parent) is watched for that name to appear; once both
/// exist, no parent is watched, so networkd's other files (its `state`, rewritten on every change) neither
/// wake the source nor make it read everything again.
struct NetworkdWatchPlan: Equatable {
    /// What a directory is watched for.
    enum Purpose: Hashable {
        /// Its files: the directory is `leases/` or `links/`.
        case files
        /// These names appearing in it: the way to a missing directory.
        case arrival(Set<String>)
    }

    /// What an event about one entry of a watched directory asks for.
    enum Reaction: Equatable {
        /// Read this link's files again.
        case readLink(Int32)
        /// Watch again and read every file: a directory on the way appeared.
        case rescan
        case nothing
    }

    /// The directories followed, in networkd's root.
    static let directories = ["leases", "links"]

    /// Each path to watch, with what for.
    let watches: [String: Purpose]

    /// The watches wanted when the paths in `present` (among `candidates`) exist as directories.
    init(root: String, present: Set<String>) {
        let parent = Self.parent(of: root)
        var watches: [String: Purpose] = [:]
        var awaited: Set<String> = []
        for name in Self.directories {
            if present.contains("\(root)/\(name)") {
                watches["\(root)/\(name)"] = .files
            } else {
                awaited.insert(name)
            }
        }
        if !awaited.isEmpty {
            if present.contains(root) {
                watches[root] = .arrival(awaited)
            } else if !parent.isEmpty, present.contains(parent) {
                watches[parent] = .arrival([String(root.dropFirst(parent.count + 1))])
            }
        }
        self.watches = watches
    }

    /// The paths whose existence decides the plan: both directories, the root and the root's parent.
    static func candidates(root: String) -> [String] {
        directories.map { "\(root)/\($0)" } + [root, parent(of: root)].filter { !$0.isEmpty }
    }

    /// What an event about entry `name` of the watched `path` asks for.
    func reaction(to name: some Collection<UInt8>, in path: String) -> Reaction {
        switch watches[path] {
        case .files: Self.interfaceIndex(name).map(Reaction.readLink) ?? .nothing
        case .arrival(let names): names.contains(String(decoding: name, as: UTF8.self)) ? .rescan : .nothing
        case nil: .nothing
        }
    }

    /// A file name made of digits only (networkd's temporary files start with `.#`).
    static func interfaceIndex(_ name: some Collection<UInt8>) -> Int32? {
        guard !name.isEmpty, name.count <= 10, name.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int32(String(decoding: name, as: UTF8.self))
    }

    /// The path up to its last slash ("" when there is none).
    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }
}
