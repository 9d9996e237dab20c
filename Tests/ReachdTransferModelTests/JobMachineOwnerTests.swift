import ReachdModel
import ReachdTransferModel
import XCTest

/// The owner's operations in every state, as tables of transitions.
final class JobMachineOwnerTests: XCTestCase {
    private typealias F = Fixture

    /// A machine in `state`; `.running` has a transfer task.
    private func machine(in state: JobState, upload: Bool = false) -> JobMachine {
        state == .running ? F.running(F.job(upload: upload)) : F.machine(F.job(state, upload: upload))
    }

    func testPauseInEveryState() {
        let table: [(JobState, JobState, [JobAction])] = [
            (.queued, .paused, []),
            (.deferred, .paused, []),
            (.running, .paused, [.stopAttempt]),
            (.paused, .paused, []),
            (.completed, .completed, [.refuse("job j is completed")]),
            (.failed, .failed, [.refuse("job j is failed")]),
            (.cancelled, .cancelled, [.refuse("job j is cancelled")]),
        ]
        for (from, to, effects) in table {
            var machine = machine(in: from)
            let actions = machine.handle(.pause, at: F.at(5))
            XCTAssertEqual(machine.job.state, to, "\(from)")
            XCTAssertEqual(actions.effects, effects, "\(from)")
            XCTAssertEqual(machine.life.transfer?.stop, from == .running ? .pause : nil, "\(from)")
        }
    }

    func testResumeInEveryState() {
        let table: [(JobState, JobState, [JobAction])] = [
            (.queued, .queued, []),
            (.running, .running, []),
            (.deferred, .queued, [.watchHost, .reschedule]),
            (.paused, .queued, [.watchHost, .reschedule]),
            (.failed, .queued, [.watchHost, .reschedule]),
            (.completed, .completed, [.refuse("job j is completed")]),
            (.cancelled, .cancelled, [.refuse("job j is cancelled")]),
        ]
        for (from, to, effects) in table {
            var job = F.job(from)
            job.attempts = 2
            job.retryAt = F.at(100).now
            var machine = from == .running ? F.running(job) : F.machine(job)
            let actions = machine.handle(.resume, at: F.at(5))
            XCTAssertEqual(machine.job.state, to, "\(from)")
            XCTAssertEqual(actions.effects, effects, "\(from)")
            if to == .queued && from != .queued {
                XCTAssertEqual(machine.job.attempts, 0)
                XCTAssertNil(machine.job.retryAt)
                XCTAssertNil(machine.job.reason)
            }
        }
    }

    func testACapChangesInEveryUnfinishedStateAndNoFinishedOne() {
        for state in JobState.allCases {
            var machine = state == .running ? F.running(F.job(state)) : F.machine(F.job(state))
            let actions = machine.handle(.capRate(65536), at: F.at(5))
            if state.isTerminal {
                XCTAssertEqual(actions.effects, [.refuse("job j is \(state.rawValue); only an unfinished job is capped")], "\(state)")
                XCTAssertNil(machine.job.maxRate)
            } else {
                XCTAssertEqual(machine.job.maxRate, 65536, "\(state)")
                XCTAssertEqual(machine.job.state, state)
                _ = machine.handle(.capRate(nil), at: F.at(6))
                XCTAssertNil(machine.job.maxRate)
            }
        }
    }

    func testANewProxyIsShownInEveryStateWithoutChangingIt() {
        for state in JobState.allCases {
            var machine = state == .running ? F.running(F.job(state)) : F.machine(F.job(state))
            let actions = machine.handle(.proxyChosen("http://proxy.example:3128"), at: F.at(5))
            XCTAssertEqual(machine.job.viaProxy, "http://proxy.example:3128", "\(state)")
            XCTAssertEqual(machine.job.state, state)
            XCTAssertTrue(actions.contains { if case .notify(let job) = $0 { job.viaProxy != nil } else { false } }, "\(state)")
            XCTAssertTrue(machine.handle(.proxyChosen("http://proxy.example:3128"), at: F.at(6)).isEmpty, "the same proxy again: \(state)")
        }
    }

    func testCancelInEveryState() {
        let table: [(JobState, Bool, JobState, [JobAction])] = [
            (.queued, false, .cancelled, [.unwatchHost, .removePartial]),
            (.deferred, false, .cancelled, [.unwatchHost, .removePartial]),
            (.paused, false, .cancelled, [.unwatchHost, .removePartial]),
            (.queued, true, .cancelled, [.unwatchHost]),
            (.running, false, .cancelled, [.unwatchHost, .stopAttempt]),
            (.completed, false, .completed, [.refuse("job j is already completed")]),
            (.failed, false, .failed, [.refuse("job j is already failed")]),
            (.cancelled, false, .cancelled, [.refuse("job j is already cancelled")]),
        ]
        for (from, upload, to, effects) in table {
            var machine = machine(in: from, upload: upload)
            let actions = machine.handle(.cancel, at: F.at(5))
            XCTAssertEqual(machine.job.state, to, "\(from) upload: \(upload)")
            XCTAssertEqual(actions.effects, effects, "\(from) upload: \(upload)")
        }
    }

    func testACancelledTransferDropsItsPartialFileWhenItEnds() {
        var machine = F.running()
        _ = machine.handle(.cancel, at: F.at(2))
        let actions = machine.handle(.attemptEnded(.stopped, partialSize: 300), at: F.at(3))
        XCTAssertEqual(actions, [.removePartial, .attemptOver, .reschedule])
        XCTAssertEqual(machine.job.state, .cancelled)
        XCTAssertFalse(machine.life.holdsSlot)
    }

    func testAPausedTransferKeepsWhatArrived() {
        var machine = F.running()
        _ = machine.handle(.pause, at: F.at(2))
        let actions = machine.handle(.attemptEnded(.stopped, partialSize: 300), at: F.at(3))
        XCTAssertEqual(machine.job.state, .paused)
        XCTAssertEqual(machine.job.bytesMoved, 300)
        XCTAssertEqual(actions.effects, [.attemptOver, .reschedule])
        XCTAssertEqual(actions.persisted?.updated, F.at(3).now)
    }

    func testRemoveOnlyFinishedJobs() {
        let table: [(JobState, [JobAction])] = [
            (.completed, [.forget]), (.failed, [.forget]), (.cancelled, [.forget]),
            (.queued, [.refuse("job j is queued; cancel it first, then remove it")]),
            (.paused, [.refuse("job j is paused; cancel it first, then remove it")]),
        ]
        for (state, effects) in table {
            var machine = F.machine(F.job(state))
            XCTAssertEqual(machine.handle(.remove, at: F.at(5)), effects, "\(state)")
        }
    }

    func testRefreshInEveryState() {
        var completed = F.completedRefreshing()
        XCTAssertEqual(completed.handle(.refresh, at: F.at(20)).effects, [.watchHost, .reschedule])
        XCTAssertEqual(completed.job.download?.nextCheck, F.at(20).now)
        XCTAssertEqual(completed.handle(.reevaluate(F.unmetered), at: F.at(20)).effects, [])
        XCTAssertEqual(completed.job.state, .queued)
        XCTAssertEqual(completed.handle(.refresh, at: F.at(21)), [], "a refresh check under way is not asked again")

        let refused: [(Job, String)] = [
            (F.job(.completed, upload: true), "job j is an upload; only downloads are refreshed"),
            (F.job(.queued), "job j is queued; only a completed download can be refreshed"),
            (F.job(.failed), "job j is failed; only a completed download can be refreshed"),
        ]
        for (job, why) in refused {
            var machine = F.machine(job)
            XCTAssertEqual(machine.handle(.refresh, at: F.at(5)), [.refuse(why)])
            XCTAssertEqual(machine.job, job)
        }
    }

    func testAddedTellsWatchersAndFollowsTheHost() {
        var machine = F.machine(F.job())
        XCTAssertEqual(machine.handle(.added, at: F.at(0)), [.notify(F.job()), .watchHost])
        XCTAssertEqual(machine.lastEventSeconds, 0)
    }

    func testShutdownStopsARunningTransferAndDefersIt() {
        var idle = F.machine(F.job())
        XCTAssertEqual(idle.handle(.shutdown, at: F.at(2)), [])
        var machine = F.running()
        XCTAssertEqual(machine.handle(.shutdown, at: F.at(2)), [.stopAttempt])
        _ = machine.handle(.attemptEnded(.stopped, partialSize: 50), at: F.at(3))
        XCTAssertEqual(machine.job.state, .deferred)
        XCTAssertEqual(machine.job.reason, "deferred: reachd-transfers stopped")
        XCTAssertEqual(machine.job.bytesMoved, 50)
    }

    /// A crashed service's jobs: a running one is queued again from what its partial file holds.
    func testCrashRecoveryOnLoad() {
        let validators = Validators(etag: "\"v1\"")
        let table: [(JobState, Int64, JobState, Int64, Validators)] = [
            (.running, 300, .queued, 300, validators),
            (.running, 0, .queued, 0, Validators()),
            (.paused, 120, .paused, 120, validators),
            (.deferred, 0, .deferred, 0, Validators()),
            (.completed, 0, .completed, 999, validators),
            (.failed, 0, .failed, 999, validators),
        ]
        for (stored, partial, state, bytes, kept) in table {
            var job = F.job(stored)
            job.bytesMoved = 999
            job.changeDownload { $0.partial = validators }
            var machine = F.machine(job)
            XCTAssertEqual(machine.handle(.recovered(partialSize: partial), at: F.at(50)), [], "nothing is written at load")
            XCTAssertEqual(machine.job.state, state, "\(stored)")
            XCTAssertEqual(machine.job.bytesMoved, bytes, "\(stored)")
            XCTAssertEqual(machine.job.download?.partial, kept, "\(stored)")
            XCTAssertFalse(machine.life.holdsSlot)
        }
    }

    /// `reevaluates(at:)` lets the scheduler skip a job only when a re-decision would change nothing: for every
    /// kind of job it says no to, reevaluating on any route yields no action and leaves the job as it is.
    func testAJobReevaluatesSaysNoToIsLeftAsItIs() {
        var pausedWhileRunning = F.running()
        _ = pausedWhileRunning.handle(.pause, at: F.at(2))
        var cancelled = F.machine(F.job())
        _ = cancelled.handle(.cancel, at: F.at(2))
        let machines: [(String, JobMachine, Bool)] = [
            ("queued", F.machine(F.job(.queued)), true),
            ("deferred", F.machine(F.job(.deferred)), true),
            ("running", F.running(), true),
            ("paused", F.machine(F.job(.paused)), false),
            ("paused while running", pausedWhileRunning, false),
            ("failed", F.machine(F.job(.failed)), false),
            ("cancelled", cancelled, false),
            ("completed, kept fresh, check not due", F.completedRefreshing(), false),
            ("completed, not kept fresh", F.machine(F.job(.completed)), false),
        ]
        for (name, machine, expected) in machines {
            XCTAssertEqual(machine.reevaluates(at: F.at(20).now), expected, name)
            guard !expected else { continue }
            for route in [F.unmetered, F.metered, F.unknown] {
                var left = machine
                XCTAssertEqual(left.handle(.reevaluate(route), at: F.at(20)), [], "\(name) on \(route)")
                XCTAssertEqual(left.job, machine.job, name)
            }
        }
        XCTAssertTrue(F.completedRefreshing().reevaluates(at: F.at(70).now), "a due refresh check")
    }
}
