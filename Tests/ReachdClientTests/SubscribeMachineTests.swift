import ReachdClient
import ReachdProtocol
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The rules of a subscription to reachd's stream: each row a state and an event, the next state and the actions.
final class SubscribeMachineTests: XCTestCase {
    private typealias Machine = SubscribeMachine

    private struct Row {
        let state: Machine
        let event: Machine.Event
        let next: Machine
        let actions: [Machine.Action]
        let line: UInt
    }

    private static let gone = ClientError(.closed, talkingTo: .reachd)
    private static let absent = ClientError(.connect(path: "/run/reachd/reachd.sock", errno: ENOENT), talkingTo: .reachd)
    private static let refusal = ClientError(.refused(ProtocolError(.tooManyConnections, "too many connections")), talkingTo: .reachd)

    private func row(_ state: Machine, _ event: Machine.Event, _ next: Machine, _ actions: [Machine.Action], line: UInt = #line) -> Row {
        Row(state: state, event: event, next: next, actions: actions, line: line)
    }

    private func check(_ rows: [Row]) {
        for row in rows {
            var machine = row.state
            let actions = machine.handle(row.event)
            XCTAssertEqual(actions, row.actions, "\(row.state) + \(row.event)", line: row.line)
            XCTAssertEqual(machine, row.next, "\(row.state) + \(row.event)", line: row.line)
        }
    }

    private func backoff(_ phase: Machine.Phase, delay: Int = 100, reported: Bool = false) -> Machine {
        Machine(retry: .backoff, phase: phase, retryDelay: delay, reported: reported)
    }

    private func once(_ phase: Machine.Phase, reported: Bool = false) -> Machine {
        Machine(retry: .never, phase: phase, reported: reported)
    }

    func testReconnectingSubscription() {
        check([
            row(backoff(.idle), .start, backoff(.connecting), [.connect]),
            row(backoff(.connecting), .connected, backoff(.subscribing), []),
            row(backoff(.subscribing), .verdicts, backoff(.subscribed), [.deliver]),
            row(backoff(.subscribed), .verdicts, backoff(.subscribed), [.deliver]),
            // reachd went away: reported once, tried again after 0.1 s, the wait doubling while it stays away.
            row(backoff(.subscribed), .lost(Self.gone), backoff(.waiting, delay: 200, reported: true), [.reportUnreachable(Self.gone), .wait(milliseconds: 100)]),
            row(backoff(.waiting, delay: 200, reported: true), .timerFired, backoff(.connecting, delay: 200, reported: true), [.connect]),
            row(backoff(.connecting, delay: 200, reported: true), .lost(Self.absent), backoff(.waiting, delay: 400, reported: true), [.wait(milliseconds: 200)]),
            row(backoff(.connecting, delay: 3200, reported: true), .lost(Self.absent), backoff(.waiting, delay: 5000, reported: true), [.wait(milliseconds: 3200)]),
            row(backoff(.connecting, delay: 5000, reported: true), .lost(Self.absent), backoff(.waiting, delay: 5000, reported: true), [.wait(milliseconds: 5000)]),
            // Connected again but gone before it answered: still the same outage.
            row(backoff(.subscribing, delay: 400, reported: true), .lost(Self.gone), backoff(.waiting, delay: 800, reported: true), [.wait(milliseconds: 400)]),
            // Back: the verdicts are handed on, and the next drop waits 0.1 s again.
            row(backoff(.subscribing, delay: 5000, reported: true), .verdicts, backoff(.subscribed), [.deliver]),
            // The first connection fails: reported, tried again.
            row(backoff(.connecting), .lost(Self.absent), backoff(.waiting, delay: 200, reported: true), [.reportUnreachable(Self.absent), .wait(milliseconds: 100)]),
        ])
    }

    func testRefusedSubscriptionIsAskedForAgainAfterFiveSeconds() {
        check([
            row(backoff(.subscribing), .refused(Self.refusal), backoff(.waiting, reported: true),
                [.reportUnreachable(Self.refusal), .wait(milliseconds: 5000)]),
            // The refusal does not lengthen the backoff of drops, nor is it reported again while it lasts.
            row(backoff(.subscribing, delay: 800, reported: true), .refused(Self.refusal), backoff(.waiting, delay: 800, reported: true),
                [.wait(milliseconds: 5000)]),
            row(backoff(.waiting, reported: true), .timerFired, backoff(.connecting, reported: true), [.connect]),
            row(backoff(.subscribed), .refused(Self.refusal), backoff(.waiting, reported: true),
                [.reportUnreachable(Self.refusal), .wait(milliseconds: 5000)]),
        ])
    }

    private func owned(_ phase: Machine.Phase, delay: Int = 100, reported: Bool = false) -> Machine {
        Machine(retry: .backoff, phase: phase, retryDelay: delay, reported: reported, connectionEndsOutage: true)
    }

    /// An owner that sends its own requests (reachd-transfers): a connection ends the outage before any verdict,
    /// and is announced, so that the owner subscribes its hosts again on it.
    func testConnectionEndsTheOutageForAnOwnerOfItsRequests() {
        check([
            row(owned(.idle), .start, owned(.connecting), [.connect]),
            row(owned(.connecting), .connected, owned(.subscribed), [.announceConnected]),
            // Back after an outage: reported again at the next drop, which waits 0.1 s again, verdict or not.
            row(owned(.connecting, delay: 1600, reported: true), .connected, owned(.subscribed), [.announceConnected]),
            row(owned(.subscribed), .lost(Self.gone), owned(.waiting, delay: 200, reported: true), [.reportUnreachable(Self.gone), .wait(milliseconds: 100)]),
            row(owned(.subscribed), .verdicts, owned(.subscribed), [.deliver]),
            row(owned(.connecting, delay: 200, reported: true), .lost(Self.absent), owned(.waiting, delay: 400, reported: true), [.wait(milliseconds: 200)]),
        ])
    }

    func testOneConnectionEndsWithIt() {
        check([
            row(once(.idle), .start, once(.connecting), [.connect]),
            row(once(.connecting), .connected, once(.subscribing), []),
            row(once(.subscribing), .verdicts, once(.subscribed), [.deliver]),
            row(once(.subscribed), .lost(Self.gone), once(.stopped, reported: true), [.reportUnreachable(Self.gone), .stop]),
            row(once(.subscribing), .refused(Self.refusal), once(.stopped, reported: true), [.reportUnreachable(Self.refusal), .stop]),
            row(once(.connecting), .lost(Self.absent), once(.stopped, reported: true), [.reportUnreachable(Self.absent), .stop]),
        ])
    }

    func testStopEndsEverythingAndNothingFollows() {
        for phase: Machine.Phase in [.idle, .connecting, .subscribing, .subscribed, .waiting] {
            check([row(backoff(phase, delay: 400), .stop, backoff(.stopped, delay: 400), [.stop])])
        }
        for event: Machine.Event in [.start, .connected, .verdicts, .lost(Self.gone), .refused(Self.refusal), .timerFired, .stop] {
            check([row(backoff(.stopped), event, backoff(.stopped), [])])
        }
    }

    /// Events that belong to no current step (a late timer, an answer from a connection given up) change nothing.
    func testStaleEventsAreIgnored() {
        check([
            row(backoff(.subscribed), .timerFired, backoff(.subscribed), []),
            row(backoff(.subscribed), .start, backoff(.subscribed), []),
            row(backoff(.waiting, reported: true), .verdicts, backoff(.waiting, reported: true), []),
            row(backoff(.waiting, reported: true), .lost(Self.gone), backoff(.waiting, reported: true), []),
            row(backoff(.waiting, reported: true), .refused(Self.refusal), backoff(.waiting, reported: true), []),
            row(backoff(.connecting), .verdicts, backoff(.connecting), []),
            row(backoff(.idle), .lost(Self.gone), backoff(.idle), []),
        ])
    }
}
