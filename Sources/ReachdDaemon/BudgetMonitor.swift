import Logging
import ReachdModel
import ReachdMonitor
import ReachdNetlink
import ReachdServiceKit
import ReachdSystem
import ServiceLifecycle
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Counts the `[[budget]]` data budgets (issue 33): every `sampleSeconds` it reads the kernel's byte counters
/// of the links a budget covers from sysfs, counts them in its `BudgetBook` (pure) and hands the standings to
/// the verdicts when `BudgetRefreshRule` says so (a state change at once, the count alone at most every 10 s).
/// The ledgers are kept in `STATE_DIRECTORY/budgets`, read at start and written (temporary file, then rename)
/// every `saveSeconds` and at shutdown: a restart loses at most that long of counting.
///
/// A link deleted between two samples is counted from its deletion's last counters (`linkDeleted`). Where a budget
/// names a Wi-Fi network, a link that changes networks is sampled at once (`networksChanged`), and what it moved since
/// the last sample counts for the network it was on.
///
/// It runs only when budgets are configured; then the daemon wakes every `sampleSeconds`.
final class BudgetMonitor: Service, Sendable {
    static let sampleSeconds = 2
    static let saveSeconds: UInt64 = 30

    private struct State {
        var book: BudgetBook
        var rule = BudgetRefreshRule()
        /// The SSID of the network each link was on at the last sample.
        var networks: [String: [UInt8]] = [:]
        /// A sample for a change of networks is on its way (one at a time).
        var sampleQueued = false
        var current: [String: BudgetStatus] = [:]
        var savedText: String?
        var savedAt: UInt64 = 0
        var saveFailed = false
    }

    private let state: Mutex<State>
    private let sampling = Mutex(())
    /// One write of the state file at a time, outside `sampling` (a deleted link's count never waits for an fsync).
    private let saving = Mutex(())
    private let budgets: [DataBudget]
    private let view: NetworkView
    /// How the wait between samples is timed.
    private let sleeper: Sleeper
    private let sysfs: SysfsReader
    private let path: String
    private let bootID: String
    private let logger: Logger

    /// Reads the saved ledgers from `directory/budgets`: a missing file is a first start, a file that cannot be
    /// used a warning and a fresh count.
    init(budgets: [DataBudget], stateDirectory directory: String, view: NetworkView, sysfsRoot: String, sleeper: Sleeper,
         logger: Logger) {
        let path = "\(directory)/budgets"
        let boot = BootIdentity.current(kernelFile: SmallFile.text(at: "/proc/sys/kernel/random/boot_id", limit: 64),
                                        environment: getenv(BootIdentity.environmentVariable).map { String(cString: $0) })
        var saved: [String: BudgetLedger] = [:]
        if let bytes = SmallFile.bytes(at: path, limit: BudgetLedgerFile.maximumBytes + 1, flags: O_NOFOLLOW) {
            switch BudgetLedgerFile.ledgers(in: bytes) {
            case .success(let ledgers): saved = ledgers
            case .failure(let reason):
                logger.warning("ignoring the budget state file \(path): \(reason); the budgets count from zero")
            }
        } else if errno != ENOENT {
            logger.warning("cannot read the budget state file \(path): \(String(cString: strerror(errno))); the budgets count from zero")
        }
        state = Mutex(State(book: BudgetBook(budgets: budgets, saved: saved)))
        self.budgets = budgets
        self.view = view
        self.sleeper = sleeper
        sysfs = SysfsReader(root: sysfsRoot)
        self.path = path
        if boot == nil {
            logger.warning("the boot ID is unknown (/proc/sys/kernel/random/boot_id cannot be read and \(BootIdentity.environmentVariable) is not set): the budgets cannot tell a reboot from a counter that went on")
        }
        bootID = boot ?? "unknown"
        self.logger = logger
    }

    /// Each link's budget standing as last counted (for the metrics), by interface.
    var current: [String: BudgetStatus] { state.withLock { $0.current } }

    func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.sample()
                try? await self.sleeper.sleep(for: .seconds(Self.sampleSeconds))
            }
        }
        sample()
        save(force: true)
    }

    /// Reads the counters, counts them and publishes or saves what is due. One sample at a time (the loop's, and
    /// a clock's or a zone's change), so that an older count is never published after a newer one.
    func sample() {
        sampling.withLock { _ in sampleAlone() }
        save(force: false)
    }

    /// A new snapshot: when a budget names a network and a link's network changed since the last sample, samples
    /// at once, off the caller's thread (the snapshot's publisher, which `sample` would wait for).
    func networksChanged(in snapshot: NetworkSnapshot) {
        guard budgets.contains(where: { $0.network != nil }) else { return }
        let networks = snapshot.wifi.mapValues(\.identity.ssid)
        let due = state.withLock { state in
            guard state.networks != networks, !state.sampleQueued else { return false }
            state.sampleQueued = true
            return true
        }
        if due { Task { self.sample() } }
    }

    /// Counts a deleted link's last counters (its `RTM_DELLINK`), in turn with the samples: bytes it moved since the
    /// last sample are not lost when a PPP link re-dials or a modem resets between two.
    func linkDeleted(_ reading: CounterReading) {
        guard budgets.contains(where: { $0.network != nil || $0.matches(reading.interface) }) else { return }
        sampling.withLock { _ in
            let time = Timestamp.now(), synchronized = TimeChanges.clockSynchronized
            state.withLock { state in
                state.book.recordDeleted(reading, bootID: bootID, at: time, calendar: SystemCalendar(), synchronized: synchronized)
            }
        }
    }

    private func sampleAlone() {
        // The flag first, then the snapshot: a change published in between queues a sample of its own.
        let previous = state.withLock { state in
            state.sampleQueued = false
            return state.networks
        }
        let snapshot = view.hub.snapshot
        let links = snapshot.links.values
        let networks = snapshot.wifi.mapValues(\.identity.ssid)
        let countsNetworks = budgets.contains { $0.network != nil }
        var readings: [CounterReading] = []
        // A link on a Wi-Fi network, now or at the last sample, is read whenever a budget names a network: what it
        // moved since counts for the network it was on, and a link joining one counts there from this reading.
        for link in links where budgets.contains(where: { $0.matches(link.name) })
            || (countsNetworks && (networks[link.name] != nil || previous[link.name] != nil)) {
            // Only the link the snapshot names: a new one of the same name starts its own count.
            if let bytes = sysfs.byteCount(for: link.name, index: link.index) {
                readings.append(CounterReading(interface: link.name, index: link.index, bytes: bytes, network: networks[link.name]))
            }
        }
        let time = Timestamp.now(), now = MonotonicClock.nanoseconds(), calendar = SystemCalendar()
        // A synchronized clock is believed when it reads far before the period counted (`BudgetLedger`).
        let synchronized = TimeChanges.clockSynchronized
        let publish = state.withLock { state -> (links: [String: BudgetStatus], networks: [[UInt8]: BudgetStatus])? in
            // A link on another network than at the last sample moved the bytes since on the one it was on.
            if readings.contains(where: { state.networks[$0.interface] != $0.network }) {
                let before = readings.map { reading in
                    var reading = reading
                    reading.network = state.networks[reading.interface]
                    return reading
                }
                state.book.record(before, bootID: bootID, at: time, calendar: calendar, synchronized: synchronized)
            }
            state.networks = networks
            state.book.record(readings, bootID: bootID, at: time, calendar: calendar, synchronized: synchronized)
            state.current = state.book.statuses(of: links.map(\.name), networks: networks, at: time, calendar: calendar, synchronized: synchronized)
            // What the verdicts take: the interfaces' budgets by link, and every network's, which the merger gives a
            // link while it is on that network (at once when it joins one).
            let byLink = state.book.statuses(of: links.map(\.name), at: time, calendar: calendar, synchronized: synchronized)
            let byNetwork = state.book.networkStatuses(at: time, calendar: calendar, synchronized: synchronized)
            let all = byLink.merging(byNetwork.map { ("network " + WifiIdentity.hex($0.key), $0.value) }) { link, _ in link }
            return state.rule.shouldPublish(all, now: now) ? (byLink, byNetwork) : nil
        }
        if let publish { view.update(budgets: publish.links, networks: publish.networks) }
    }

    /// Writes the ledgers when `saveSeconds` passed since the last write (or `force`) and they changed.
    private func save(force: Bool) {
        saving.withLock { _ in saveAlone(force: force) }
    }

    private func saveAlone(force: Bool) {
        let now = MonotonicClock.nanoseconds()
        let text: String? = state.withLock { state in
            guard force || now &- state.savedAt >= Self.saveSeconds * 1_000_000_000 else { return nil }
            state.savedAt = now
            let text = BudgetLedgerFile.text(state.book.ledgers)
            return text == state.savedText ? nil : text
        }
        guard let text else { return }
        let failure = Self.writeAtomically(text, to: path)
        state.withLock { state in
            if failure == nil { state.savedText = text }
            // One warning while writing keeps failing, not one per attempt.
            if let failure, !state.saveFailed { logger.warning("cannot save the budgets to \(path): \(failure); counting goes on in memory") }
            state.saveFailed = failure != nil
        }
    }

    /// Writes `text` to `path.tmp`, flushes it and renames it over `path`; the error, or nil.
    static func writeAtomically(_ text: String, to path: String) -> String? {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return "\(temporary): \(String(cString: strerror(errno)))" }
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { buffer in SystemCall.result("write") { write(fd, buffer.baseAddress, buffer.count) } }
            guard case .success(let n) = written, n > 0 else {
                let reason: Errno
                switch written {
                case .failure(let error): reason = error.errno
                case .success: reason = .current
                }
                close(fd)
                unlink(temporary)
                return "\(temporary): \(reason)"
            }
            bytes = bytes.dropFirst(n)
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard synced, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            return "\(path): \(reason)"
        }
        return nil
    }
}
