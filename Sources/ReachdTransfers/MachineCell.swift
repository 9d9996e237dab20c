import ReachdModel
import ReachdTransferModel

/// A job's machine in the scheduler's table, with what every scheduling pass reads of it kept beside it: the pass
/// runs after each job's every event and reads every job, and a table of machines by value copied each machine it
/// read (with 1,000 jobs, those copies were most of a refresh check's CPU). Events reach the machine only through
/// `handle`, which brings the kept values up to date. Only the scheduler's actor touches a cell.
final class MachineCell {
    private(set) var machine: JobMachine
    /// `machine.reevaluatesFrom`.
    private(set) var reevaluatesFrom: Timestamp?
    /// `machine.wakeAt`.
    private(set) var wakeAt: Timestamp?
    /// The job's place in the queue while it is queued.
    private(set) var place: JobQueue.Place?

    init(_ machine: JobMachine) {
        self.machine = machine
        keep()
    }

    var job: Job { machine.job }

    /// Feeds `event` to the machine; its actions.
    func handle(_ event: JobEvent, at moment: JobMoment) -> [JobAction] {
        defer { keep() }
        return machine.handle(event, at: moment)
    }

    func reevaluates(at now: Timestamp) -> Bool {
        reevaluatesFrom.map { $0 <= now } ?? false
    }

    private func keep() {
        reevaluatesFrom = machine.reevaluatesFrom
        wakeAt = machine.wakeAt
        place = JobQueue.Place(machine.job)
    }
}
