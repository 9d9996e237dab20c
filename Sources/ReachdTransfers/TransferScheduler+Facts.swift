import ReachdModel
import ReachdSystem
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// The facts beside the verdict that jobs' constraints weigh: the power, the destination's free space, roaming.
extension TransferScheduler {
    /// New power facts (from `PowerSource`): every job is decided again.
    func powerChanged(_ facts: PowerFacts) {
        guard facts != power else { return }
        power = facts
        logger.info("power", metadata: ["onBattery": "\(facts.onBattery.map(String.init) ?? "unknown")",
                                        "percentage": "\(facts.batteryPercent.map { String(Int($0)) } ?? "none")",
                                        "profile": "\(facts.profile ?? "unknown")"])
        reschedule()
    }

    /// The facts for `job`: the free space is looked at only for a job that asks for it, off the scheduler
    /// (`DestinationLooks`); a destination where a write is stuck (`UserFiles.notAnswering`) or whose look does not
    /// answer holds its own jobs only.
    func facts(for job: Job, verdict: Verdict?) -> GateFacts {
        var facts = GateFacts(power: power, roaming: RoamingFact(verdict: verdict), clockBehind: clock.behind)
        if job.constraints.network.contains(.withinBudget), let link = verdict?.interface {
            facts.budgetReserved = budgetReserved(on: link, besides: job.id, used: verdict?.budget?.usedBytes)
        }
        guard !job.isUpload, let slash = job.file.lastIndex(of: "/") else { return facts }
        let directory = slash == job.file.startIndex ? "/" : String(job.file[..<slash])
        if !files.isAnswering(directory) {
            facts.destination = .notAnswering(directory)
            return facts
        }
        guard job.constraints.storageNotLow else { return facts }
        let (answer, look) = destinations.answer(for: directory, now: MonotonicClock.nanoseconds())
        if look { lookAtFreeSpace(in: directory) }
        switch answer {
        case .free(let bytes): facts.freeBytes = bytes
        case .reading: facts.destination = .reading
        case .notAnswering: facts.destination = .notAnswering(directory)
        }
        return facts
    }

    /// What the running `within-budget` jobs on `link` still have to move (their sizes known): all of them for a
    /// job that waits, those that started before it for a running one (so that of two that do not fit together,
    /// the later one stops and the earlier one goes on); and what the queue moved there that the count `used` does not
    /// hold yet (`UncountedBudgetBytes`).
    func budgetReserved(on link: String, besides id: String, used: UInt64?) -> UInt64 {
        let before = startOrder[id] ?? .max
        return running.keys.reduce(into: uncounted.uncounted(on: link, used: used)) { sum, other in
            guard other != id, startOrder[other] ?? .max < before, let job = machines[other]?.job, job.constraints.network.contains(.withinBudget),
                  let total = job.bytesTotal, verdict(for: job)?.interface == link else { return }
            sum = sum.addingSaturated(UInt64(max(0, total - job.bytesMoved)))
        }
    }

    /// The wall clock was set or the zone changed: every job's times are planned again (a set clock is trusted).
    func timeChanged(_ change: TimeChanges.Change) {
        if change == .clockSet, clock.behind != nil {
            clock.clockWasSet()
            logger.info("the clock is trusted now: jobs' times hold")
        }
        reschedule()
    }

    /// What the clock is still behind (`ClockTrust`), looking at systemd-timesyncd's word.
    func checkClock(at now: Timestamp) -> Timestamp? {
        clock.check(now: now, synchronized: TimeChanges.clockSynchronized)
    }

    /// Reads the free space of `directory` on a thread of its own; the jobs are decided again when it answers,
    /// and once `answerSeconds` have passed (a look still under way then shows as not answering).
    private func lookAtFreeSpace(in directory: String) {
        do {
            try DetachedThread.start { [weak self] in
                let bytes = Self.freeBytes(in: directory)
                Task { await self?.looked(at: directory, bytes: bytes) }
            }
        } catch {
            // No thread: taken as unreadable (which satisfies storageNotLow), and decided again.
            destinations.looked(directory, bytes: nil, now: MonotonicClock.nanoseconds())
            Task { [weak self] in await self?.reschedule() }
            return
        }
        Task { [weak self] in
            try? await Task.sleep(for: .seconds(Double(DestinationLooks.answerSeconds)))
            await self?.reschedule()
        }
    }

    private func looked(at directory: String, bytes: Int64?) {
        destinations.looked(directory, bytes: bytes, now: MonotonicClock.nanoseconds())
        reschedule()
    }

    /// Bytes an unprivileged writer may still use on the file system of `directory`; nil when it cannot be read.
    static func freeBytes(in directory: String) -> Int64? {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        let (bytes, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        return overflow || bytes > UInt64(Int64.max) ? Int64.max : Int64(bytes)
    }
}
