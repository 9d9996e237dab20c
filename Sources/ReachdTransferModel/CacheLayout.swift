/// How the offline cache lays out its files, and how a per-uid directory of an older layout is brought to it.
///
/// A user's own instance keeps everything to itself (0700, 0600). The system instance cannot hand a file to
/// its client, so its per-uid directories are 0711 (passable, not listable) and its bodies 0644 under random
/// 128-bit names. Before it ran as its own user, it ran as root and kept each uid's bodies in a 0700 directory
/// of that user, 0600, under names derived from the URL; the upgrade hands them to the new user, 0700 still.
public enum CacheLayout {
    public static func directoryMode(shared: Bool) -> UInt32 { shared ? 0o711 : 0o700 }
    public static func bodyMode(shared: Bool) -> UInt32 { shared ? 0o644 : 0o600 }

    /// A body's name: 128 random bits in hex.
    public static func bodyName(using generator: inout some RandomNumberGenerator) -> String {
        (0..<16).map { _ in
            let byte = UInt8.random(in: .min ... .max, using: &generator)
            return String(byte >> 4, radix: 16) + String(byte & 15, radix: 16)
        }.joined()
    }

    /// Whether a per-uid directory of mode `mode` is of the older layout: in the system instance, one its
    /// clients cannot pass (the current one is 0711, or 0710 under the unit's `UMask=0027`). Its bodies may be
    /// readable by none but the daemon and their names guessable from the URL: opening the directory alone
    /// would either fail every client or expose the bodies.
    public static func needsMigration(directoryMode mode: UInt32, shared: Bool) -> Bool {
        shared && mode & 0o011 == 0
    }

    /// What migrating a directory does with what it holds.
    public struct Migration: Hashable, Sendable {
        /// Entries (by key) whose body is there: renamed at random and made readable.
        public var moved: [String] = []
        /// Entries whose body is missing: deleted.
        public var missing: [String] = []
        /// Files no entry names (temporaries of an interrupted fetch, bodies already replaced): removed.
        public var leftovers: [String] = []
    }

    /// The migration of `directory`, which holds the files `names`; `entries` are its uid's (key, body path).
    public static func migration(of directory: String, names: [String], entries: [(key: String, file: String)]) -> Migration {
        var migration = Migration()
        var named = Set<String>()
        let present = Set(names)
        for entry in entries {
            let name = entry.file.hasPrefix(directory + "/") ? String(entry.file.dropFirst(directory.count + 1)) : nil
            if let name, !name.contains("/"), present.contains(name) {
                migration.moved.append(entry.key)
                named.insert(name)
            } else {
                migration.missing.append(entry.key)
            }
        }
        migration.leftovers = names.filter { !named.contains($0) }.sorted()
        return migration
    }
}
