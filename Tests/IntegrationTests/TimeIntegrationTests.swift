import Foundation
import ReachdModel
import ReachdTestSupport
import ReachdTransferModel
import XCTest

/// Jobs' times follow the wall clock and the local zone as they change under a running reachd-transfers: a step
/// of its wall clock (the clock it reads shifted by Tests/Support/clock_shift.c, and the kernel told that the
/// clock was set) and a new zone in its `/etc/localtime` (the lab's, bind-mounted there by `ip netns exec`).
final class TimeIntegrationTests: XCTestCase {
    private var lab: TransferLab!

    override func tearDown() {
        lab?.tearDown()
        lab = nil
    }

    /// An hour's step forward: a job whose not-before time and one whose window the step passes both start,
    /// without waiting out the timer armed before the step.
    func testAStepOfTheWallClockStartsTheJobsWhoseTimeItPassed() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.lab.zoneFile("Asia/Tokyo")
        let shiftFile = try startDaemonOnAShiftedClock()
        let sum = try lab.serve("t.bin", bytes: 300_000)
        let now = Timestamp.now()
        let notBefore = try lab.add(lab.url("t.bin"), output: lab.out + "/n.bin",
                                    ["--not-before", Timestamp(microseconds: now.microseconds + 3_600_000_000).description])
        // Opens 61 to 62 minutes from now, Tokyo's time, and stays open an hour.
        let opens = (TransferLab.minuteOfDay(in: "Asia/Tokyo", ahead: 3_660) + 1) % 1440
        let window = try lab.add(lab.url("t.bin"), output: lab.out + "/w.bin", ["--window", "\(TransferLab.clock(opens))-\(TransferLab.clock((opens + 60) % 1440))"])
        for id in [notBefore, window] {
            _ = try lab.waitFor(id, "waiting for its time") { $0.state == .deferred && ($0.reason ?? "").hasPrefix("waiting until ") }
        }

        // 64 minutes: past the not-before time and into the window.
        try "3840\n".write(toFile: shiftFile, atomically: true, encoding: .utf8)
        try ClockStep.byANanosecondAndBack()
        for id in [notBefore, window] {
            _ = try lab.waitFor(id, "completed after the step") { $0.state == .completed }
        }
        XCTAssertEqual(try lab.sha256(lab.out + "/n.bin"), sum)
        XCTAssertEqual(try lab.sha256(lab.out + "/w.bin"), sum)
        XCTAssertTrue(lab.log.contains("the wall clock was set"), lab.log)
    }

    /// Tokyo, then New York: a window open now in New York (and shut in Tokyo, 13 or 14 hours ahead) starts
    /// when the zone's file is rewritten, not at Tokyo's opening.
    func testANewTimeZoneHoldsForAWindowAtOnce() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.lab.zoneFile("Asia/Tokyo")
        try lab.startDaemon()
        let sum = try lab.serve("z.bin", bytes: 300_000)
        let newYork = TransferLab.minuteOfDay(in: "America/New_York")
        let window = "\(TransferLab.clock((newYork + 1410) % 1440))-\(TransferLab.clock((newYork + 90) % 1440))"
        let id = try lab.add(lab.url("z.bin"), output: lab.out + "/z.bin", ["--window", window])
        let waiting = try lab.waitFor(id, "waiting for Tokyo's window") { $0.state == .deferred && $0.reason != nil }
        XCTAssertTrue((waiting.reason ?? "").hasPrefix("waiting until "), waiting.reason ?? "")

        try lab.lab.zoneFile("America/New_York")
        _ = try lab.waitFor(id, "completed in New York's window") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/z.bin"), sum)
        XCTAssertTrue(lab.log.contains("the local time zone changed"), lab.log)
    }

    /// A clock that reads before the job table's last change (a device without a real-time clock, booted 400 days
    /// in the past) is not trusted for jobs' times: a job whose window is open at this time of day waits, saying
    /// why, while one without times runs; once the clock is set, the window holds.
    func testAClockBehindTheJobTableHoldsJobsWithTimesUntilItIsSet() throws {
        lab = try TransferLab()
        try lab.startTestServer()
        try lab.lab.zoneFile("Asia/Tokyo")
        let shiftFile = try startDaemonOnAShiftedClock()
        let sum = try lab.serve("c.bin", bytes: 300_000)
        let first = try lab.add(lab.url("c.bin"), output: lab.out + "/first.bin")
        _ = try lab.waitFor(first, "completed on the set clock") { $0.state == .completed }
        lab.stopDaemon()

        try "-34560000\n".write(toFile: shiftFile, atomically: true, encoding: .utf8)
        _ = try startDaemonOnAShiftedClock(shiftFile: shiftFile)
        let minute = TransferLab.minuteOfDay(in: "Asia/Tokyo")
        let windowed = try lab.add(lab.url("c.bin"), output: lab.out + "/w.bin", ["--window", "\(TransferLab.clock((minute + 1410) % 1440))-\(TransferLab.clock((minute + 90) % 1440))"])
        let plain = try lab.add(lab.url("c.bin"), output: lab.out + "/p.bin")
        _ = try lab.waitFor(plain, "completed without times") { $0.state == .completed }
        let held = try lab.waitFor(windowed, "held until the clock is set") { $0.state == .deferred && $0.reason != nil }
        XCTAssertTrue((held.reason ?? "").hasPrefix("waiting: the clock is not set yet (it reads before the job table's last change, "), held.reason ?? "")

        try "0\n".write(toFile: shiftFile, atomically: true, encoding: .utf8)
        try ClockStep.byANanosecondAndBack()
        _ = try lab.waitFor(windowed, "completed in its window on the set clock") { $0.state == .completed }
        XCTAssertEqual(try lab.sha256(lab.out + "/w.bin"), sum)
    }

    /// Starts reachd-transfers with its wall clock shifted by the seconds in the file it returns (Tests/Support/
    /// clock_shift.c, built into the lab's directory); `shiftFile`: one made before (else a new one, shift 0).
    private func startDaemonOnAShiftedClock(shiftFile: String? = nil) throws -> String {
        let library = lab.lab.directory + "/clock_shift.so"
        let file = shiftFile ?? lab.lab.directory + "/clock-shift"
        if shiftFile == nil {
            let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Support/clock_shift.c").standardized.path
            try lab.lab.run("cc -shared -fPIC -O2 -o \(library) \(source) && chmod 755 \(library)")
            try "0\n".write(toFile: file, atomically: true, encoding: .utf8)
            chmod(file, 0o644)
        }
        try lab.startDaemon(environment: ["LD_PRELOAD": library, "REACHD_CLOCK_SHIFT_FILE": file])
        return file
    }

}
