import ReachdModel
@testable import ReachdTransferModel
import XCTest

/// The job's life as one table: (life, event) → (life, the state the store sees, actions).
///
/// What the old record (a state beside the optionals `attempt` with its `intent` and `finishing`, `probing`,
/// `sizeChecked`) could hold and `JobMachine.Life` cannot: a transfer task for a job shown completed, failed or
/// deferred; a job shown running with no transfer task (a stored `running` job is queued when its machine is made);
/// a stop intent or a finishing step with no attempt; a pause intent on a job shown running, or a cancel intent on
/// one shown paused; a refresh flag outside a finishing attempt; a size probe under way and answered at once.
/// Two of those were reachable and are decided now (rows marked "was:"): the service stopping no longer turns a
/// transfer its owner paused or cancelled into a deferred one, and a transfer's end while its attempt is finishing
/// is ignored rather than freeing the slot under the file operation.
final class JobMachineLifeTests: XCTestCase {
    private typealias F = Fixture
    private typealias Life = JobMachine.Life

    private struct Row {
        var name: String
        var life: Life
        var job = F.job()
        var size = JobMachine.SizeQuestion.unasked
        var event: JobEvent
        var after: Life
        var state: JobState
        var sizeAfter: JobMachine.SizeQuestion?
        var effects: [JobAction]
    }

    /// A transfer started at second 5 with nothing written since.
    private func transferring(_ stop: JobMachine.StopIntent? = nil) -> Life {
        .transferring(JobMachine.Transfer(stop: stop, checkpointBytes: 0, checkpointSeconds: 5))
    }

    private func finishing(_ step: JobMachine.Finishing, _ word: JobMachine.OwnerWord? = nil, stopAsked: Bool = false) -> Life {
        .finishing(JobMachine.Finish(step: step, refreshing: false, word: word, stopAsked: stopAsked))
    }

    private var large: Job {
        var job = F.job()
        job.bytesTotal = 5000
        return job
    }

    private var failed404: Job {
        var job = F.job()
        job.reason = "failed: 404"
        return job
    }

    private var refreshDue: Job {
        var job = F.job(refresh: 60)
        job.changeDownload { $0.lastChecked = F.at(0).now }
        job.changeDownload { $0.nextCheck = F.at(5).now }
        return job
    }

    private var rows: [Row] {
        let shutdown = "deferred: reachd-transfers stopped"
        return [
            Row(name: "queued, started", life: .queued, event: .start, after: transferring(), state: .running, effects: [.startAttempt]),
            Row(name: "paused, started (the queue decides)", life: .paused, event: .start, after: transferring(), state: .running,
                effects: [.startAttempt]),
            Row(name: "transferring, started again", life: transferring(), event: .start, after: transferring(), state: .running, effects: []),
            Row(name: "transferring, paused", life: transferring(), event: .pause, after: transferring(.pause), state: .paused,
                effects: [.stopAttempt]),
            Row(name: "stopping for a pause, resumed", life: transferring(.pause), event: .resume, after: transferring(.pauseThenResume),
                state: .queued, effects: [.watchHost, .reschedule]),
            Row(name: "paused then resumed, stopped: ends paused (its task was told to stop)", life: transferring(.pauseThenResume),
                event: .attemptEnded(.stopped, partialSize: 300), after: .paused, state: .paused, effects: [.attemptOver, .reschedule]),
            Row(name: "paused then resumed, paused again", life: transferring(.pauseThenResume), event: .pause, after: transferring(.pause),
                state: .paused, effects: [.stopAttempt]),
            Row(name: "transferring, cancelled", life: transferring(), event: .cancel, after: transferring(.cancel), state: .cancelled,
                effects: [.unwatchHost, .stopAttempt]),
            Row(name: "stopping for a cancel, paused", life: transferring(.cancel), event: .pause, after: transferring(.cancel),
                state: .cancelled, effects: [.refuse("job j is cancelled")]),
            Row(name: "stopping for a cancel, the service stops (was: deferred)", life: transferring(.cancel), event: .shutdown,
                after: transferring(.cancel), state: .cancelled, effects: [.stopAttempt]),
            Row(name: "stopping for a pause, the service stops (was: deferred)", life: transferring(.pause), event: .shutdown,
                after: transferring(.pause), state: .paused, effects: [.stopAttempt]),
            Row(name: "transferring, the service stops", life: transferring(), event: .shutdown, after: transferring(.deferral(shutdown)),
                state: .running, effects: [.stopAttempt]),
            Row(name: "stopping for the route, the service stops", life: transferring(.deferral("x")), event: .shutdown,
                after: transferring(.deferral(shutdown)), state: .running, effects: [.stopAttempt]),
            Row(name: "transferring, the machine sleeps", life: transferring(), event: .machineSleeps,
                after: transferring(.deferral("deferred: the machine went to sleep")), state: .running, effects: [.stopAttempt]),
            Row(name: "stopping for a pause, the machine sleeps", life: transferring(.pause), event: .machineSleeps,
                after: transferring(.pause), state: .paused, effects: [.stopAttempt]),
            Row(name: "queued, the machine sleeps", life: .queued, event: .machineSleeps, after: .queued, state: .queued, effects: []),
            Row(name: "stopping for the route, paused", life: transferring(.deferral("x")), event: .pause, after: transferring(.pause),
                state: .paused, effects: [.stopAttempt]),
            Row(name: "stopping for a cancel, completed anyway", life: transferring(.cancel), event: .attemptEnded(.complete(total: 10), partialSize: 10),
                after: .cancelled, state: .cancelled, effects: [.removePartial, .attemptOver, .reschedule]),
            Row(name: "stopping for a pause, completed first", life: transferring(.pause), event: .attemptEnded(.complete(total: 10), partialSize: 10),
                after: finishing(.move, .paused), state: .paused, effects: [.moveIntoPlace]),
            Row(name: "stopping for the route, stopped", life: transferring(.deferral("x")), event: .attemptEnded(.stopped, partialSize: 0),
                after: .deferred, state: .deferred, effects: [.attemptOver, .reschedule]),
            Row(name: "transferring, too large a body announced", life: transferring(), size: .asking,
                event: .attemptEnded(.notAllowed(total: 9000), partialSize: 0), after: .deferred, state: .deferred, sizeAfter: .answered,
                effects: [.attemptOver, .reschedule]),
            Row(name: "removing a failed download's partial file, removed", life: finishing(.removal(failed: failed404)), event: .partialRemoved,
                after: .failed, state: .failed, effects: [.attemptOver, .unwatchHost, .reschedule]),
            Row(name: "finishing, started", life: finishing(.digest), event: .start, after: finishing(.digest), state: .running, effects: []),
            Row(name: "finishing, a transfer's end again (was: applied, slot freed)", life: finishing(.move),
                event: .attemptEnded(.stopped, partialSize: 0), after: finishing(.move), state: .running, effects: []),
            Row(name: "finishing, paused", life: finishing(.digest), event: .pause, after: finishing(.digest, .paused, stopAsked: true),
                state: .paused, effects: [.stopAttempt]),
            Row(name: "finishing paused, resumed", life: finishing(.digest, .paused, stopAsked: true), event: .resume,
                after: finishing(.digest, .resumed, stopAsked: true), state: .queued, effects: [.watchHost, .reschedule]),
            Row(name: "finishing resumed, digest matches", life: finishing(.digest, .resumed, stopAsked: true), job: F.job(sha256: "ab"),
                event: .digestComputed(.success("ab")), after: finishing(.move, .resumed, stopAsked: true), state: .queued,
                effects: [.moveIntoPlace]),
            Row(name: "finishing cancelled, moved into place", life: finishing(.move, .cancelled, stopAsked: true), event: .movedIntoPlace(nil),
                after: .completed, state: .completed, effects: [.attemptOver, .unwatchHost, .reschedule]),
            Row(name: "finishing cancelled, removed", life: finishing(.move, .cancelled, stopAsked: true), event: .remove,
                after: finishing(.move, .cancelled, stopAsked: true), state: .cancelled, effects: [.forget]),
            Row(name: "finishing, the route stops allowing it", life: finishing(.move), job: large, event: .reevaluate(F.metered),
                after: finishing(.move, stopAsked: true), state: .running, effects: [.stopAttempt]),
            Row(name: "finishing, stop asked, reevaluated", life: finishing(.move, stopAsked: true), job: large, event: .reevaluate(F.metered),
                after: finishing(.move, stopAsked: true), state: .running, effects: []),
            Row(name: "deferred, size unasked", life: .deferred, event: .reevaluate(F.metered), after: .deferred, state: .deferred,
                sizeAfter: .asking, effects: [.probeSize]),
            Row(name: "deferred, size being asked", life: .deferred, size: .asking, event: .reevaluate(F.metered), after: .deferred,
                state: .deferred, sizeAfter: .asking, effects: []),
            Row(name: "deferred, size unknown after asking", life: .deferred, size: .answered, event: .reevaluate(F.metered), after: .deferred,
                state: .deferred, sizeAfter: .answered, effects: []),
            Row(name: "cancelled, the size answered", life: .cancelled, size: .asking, event: .sizeProbed(500), after: .cancelled,
                state: .cancelled, sizeAfter: .answered, effects: [.reschedule]),
            Row(name: "completed, refresh check due", life: .completed, job: refreshDue, size: .answered, event: .reevaluate(F.unmetered),
                after: .queued, state: .queued, sizeAfter: .unasked, effects: []),
            Row(name: "queued, a transfer's end", life: .queued, event: .attemptEnded(.stopped, partialSize: 1), after: .queued,
                state: .queued, effects: []),
            Row(name: "failed, resumed", life: .failed, event: .resume, after: .queued, state: .queued, effects: [.watchHost, .reschedule]),
        ]
    }

    func testTheLifeTable() {
        for row in rows {
            var machine = JobMachine(row.job, life: row.life, sizeQuestion: row.size, rules: F.rules)
            let actions = machine.handle(row.event, at: F.at(5))
            XCTAssertEqual(machine.life, row.after, row.name)
            XCTAssertEqual(machine.job.state, row.state, row.name)
            XCTAssertEqual(actions.effects, row.effects, row.name)
            XCTAssertEqual(machine.sizeQuestion, row.sizeAfter ?? row.size, row.name)
            if let stored = actions.persisted { XCTAssertEqual(stored.state, row.state, "\(row.name): stored") }
        }
    }

    /// A job stored as running (the service stopped without saying) has no transfer task when it is loaded: queued.
    func testAStoredRunningJobIsQueued() {
        let machine = JobMachine(F.job(.running), rules: F.rules)
        XCTAssertEqual(machine.life, .queued)
        XCTAssertEqual(machine.job.state, .queued)
    }
}
