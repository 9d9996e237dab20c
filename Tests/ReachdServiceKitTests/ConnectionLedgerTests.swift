import ReachdServiceKit
import XCTest

/// Per-user and global connection limits, and the headroom kept for privileged peers.
final class ConnectionLedgerTests: XCTestCase {
    private let limits = ConnectionLimits(perUser: 3, total: 5, reserved: 2, idleSeconds: 15)

    func testOneUserHoldsAtMostItsShareAndGetsItBackOnClose() {
        var ledger = ConnectionLedger(limits: limits)
        for _ in 0..<3 { XCTAssertEqual(ledger.admit(uid: 1000, privileged: false), .admitted) }
        guard case .refused(let reason) = ledger.admit(uid: 1000, privileged: false) else { return XCTFail("a fourth connection was admitted") }
        XCTAssertTrue(reason.contains("uid 1000 holds 3 connections"), reason)
        XCTAssertEqual(ledger.admit(uid: 1001, privileged: false), .admitted, "another user is not held up")
        ledger.release(uid: 1000, privileged: false)
        XCTAssertEqual(ledger.admit(uid: 1000, privileged: false), .admitted)
        XCTAssertEqual(ledger.open, 4)
    }

    func testPrivilegedPeersKeepHeadroomWhenEveryoneElsesShareIsTaken() {
        var ledger = ConnectionLedger(limits: limits)
        for uid: UInt32 in [1, 1, 1, 2, 2] { XCTAssertEqual(ledger.admit(uid: uid, privileged: false), .admitted) }
        guard case .refused(let reason) = ledger.admit(uid: 3, privileged: false) else { return XCTFail("past the total") }
        XCTAssertTrue(reason.contains("5 connections"), reason)
        XCTAssertEqual(ledger.admit(uid: 0, privileged: true), .admitted)
        XCTAssertEqual(ledger.admit(uid: 0, privileged: true), .admitted)
        XCTAssertNotEqual(ledger.admit(uid: 0, privileged: true), .admitted, "the reserve is bounded too")
        ledger.release(uid: 0, privileged: true)
        XCTAssertNotEqual(ledger.admit(uid: 3, privileged: false), .admitted, "a freed reserved slot is not an unprivileged one")
        XCTAssertEqual(ledger.admit(uid: 0, privileged: true), .admitted)
    }

    func testReleasingEveryConnectionLeavesNothingBehind() {
        var ledger = ConnectionLedger(limits: limits)
        for uid: UInt32 in [7, 8, 7] { _ = ledger.admit(uid: uid, privileged: false) }
        for uid: UInt32 in [7, 8, 7, 9] { ledger.release(uid: uid, privileged: false) }
        XCTAssertEqual(ledger.open, 0)
        XCTAssertTrue(ledger.byUser.isEmpty)
    }

    func testIdleRuleStopsTheClockWhileARequestRunsAndForSubscribers() {
        var rule = IdleRule()
        XCTAssertTrue(rule.clockRuns)
        XCTAssertFalse(rule.note(.requestStarted))
        XCTAssertFalse(rule.note(.requestStarted))
        XCTAssertFalse(rule.note(.requestAnswered))
        XCTAssertTrue(rule.note(.requestAnswered))
        XCTAssertTrue(rule.note(.requestAnswered), "an extra answer does not drive the count below zero")
        XCTAssertFalse(rule.note(.requestStarted))
        XCTAssertFalse(rule.note(.subscribed))
        XCTAssertFalse(rule.note(.requestAnswered), "a subscriber stays exempt")
    }

    func testEvictingSlotsReplaceTheConnectionIdleLongestNeverABusyOne() {
        var slots = EvictingSlots<Int>(capacity: 3)
        XCTAssertEqual(slots.admit(1, now: 10), .admitted)
        XCTAssertEqual(slots.admit(2, now: 20), .admitted)
        XCTAssertEqual(slots.admit(3, now: 30), .admitted)
        slots.startRequest(1)
        XCTAssertEqual(slots.admit(4, now: 40), .admittedInPlaceOf(2))
        slots.finishRequest(1, now: 50)
        XCTAssertEqual(slots.admit(5, now: 60), .admittedInPlaceOf(3))
        for id in [1, 4, 5] { slots.startRequest(id) }
        XCTAssertEqual(slots.admit(6, now: 70), .refused)
        slots.remove(4)
        XCTAssertEqual(slots.admit(6, now: 80), .admitted)
        XCTAssertEqual(slots.count, 3)
    }

    func testRefusalsAreLoggedAtMostOncePerIntervalWithACountOfTheRest() {
        var throttle = LogThrottle(intervalNanoseconds: 10)
        XCTAssertEqual(throttle.note(at: 100), 0, "the first is written")
        XCTAssertNil(throttle.note(at: 101))
        XCTAssertNil(throttle.note(at: 109))
        XCTAssertEqual(throttle.note(at: 110), 2, "the next line says how many were left out")
        XCTAssertNil(throttle.note(at: 111))
        XCTAssertEqual(throttle.note(at: 500), 1)
    }
}
