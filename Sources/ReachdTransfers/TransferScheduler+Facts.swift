import ReachdModel
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

    /// The facts for `job`: the free space is looked at only for a job that asks for it.
    func facts(for job: Job, verdict: Verdict?) -> GateFacts {
        GateFacts(power: power, freeBytes: job.constraints.storageNotLow && !job.isUpload ? Self.freeBytes(besides: job.file) : nil,
                  roaming: RoamingFact(verdict: verdict))
    }

    /// Bytes an unprivileged writer may still use on the file system of `path`'s directory; nil when it cannot be read.
    static func freeBytes(besides path: String) -> Int64? {
        guard let slash = path.lastIndex(of: "/") else { return nil }
        let directory = slash == path.startIndex ? "/" : String(path[..<slash])
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        let (bytes, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        return overflow || bytes > UInt64(Int64.max) ? Int64.max : Int64(bytes)
    }
}
