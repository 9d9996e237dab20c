import ReachdClient
import ReachdProtocol
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The errors a first-time user meets talking to the daemons: one line each, naming the cause and the fix.
final class ClientAdviceTests: XCTestCase {
    func testNoDaemonRunningSaysHowToStartIt() {
        XCTAssertEqual(
            ClientError.connect(path: "/run/reachd/reachd.sock", errno: ENOENT).explained(talkingTo: .reachd),
            "reachd is not running (no socket at /run/reachd/reachd.sock): start it with \"systemctl start reachd.socket\" "
                + "(or run reachd yourself), or pass --socket PATH"
        )
        XCTAssertEqual(
            ClientError.connect(path: "/run/user/1000/reachd-transfers.sock", errno: ECONNREFUSED).explained(talkingTo: .transfers(system: false)),
            "your reachd-transfers is not running (nothing listens at /run/user/1000/reachd-transfers.sock): start it with "
                + "\"systemctl --user start reachd-transfers.socket\", or use the system instance with --system"
        )
        let system = ClientError.connect(path: "/run/reachd/transfers.sock", errno: ENOENT).explained(talkingTo: .transfers(system: true))
        XCTAssertTrue(system.hasPrefix("the system reachd-transfers is not running"), system)
        XCTAssertTrue(system.contains("systemctl start reachd-transfers.socket"), system)
    }

    func testASocketClosedToTheUserNamesTheOnesTheyMayUse() {
        let message = ClientError.connect(path: "/run/user/1001/reachd.sock", errno: EACCES).explained(talkingTo: .reachd)
        XCTAssertEqual(message, "you may not connect to /run/user/1001/reachd.sock (Permission denied): it is another user's, or in a "
            + "directory closed to you; use the system socket /run/reachd/reachd.sock or your own (drop --socket and REACHD_SOCKET)")
        let transfers = ClientError.connect(path: "/run/reachd/transfers.sock", errno: EACCES).explained(talkingTo: .transfers(system: true))
        XCTAssertTrue(transfers.contains("use your own instance (without --system"), transfers)
    }

    func testAnUnknownJobSaysWhereTheJobsAre() {
        let refusal = ClientError.refused(ProtocolError(.notFound, "no job 0123456789abcdef"))
        XCTAssertEqual(
            refusal.explained(talkingTo: .transfers(system: false)),
            "your reachd-transfers refused the request (not_found): no job 0123456789abcdef; \"reachctl download list\" lists your own "
                + "instance's jobs (those queued with --system, or as root, are in the system instance)"
        )
        XCTAssertTrue(refusal.explained(talkingTo: .transfers(system: true)).contains("reachctl download list --system"))
    }

    /// Refusals whose message already says what to do (a full queue names max_jobs and clean) pass unchanged.
    func testOtherRefusalsKeepTheDaemonsWords() {
        let limit = ProtocolError(.limit, "uid 1000 holds 1000 jobs, the most allowed ([downloads] max_jobs_per_user); remove finished ones")
        XCTAssertEqual(
            ClientError.refused(limit).explained(talkingTo: .transfers(system: false)),
            "your reachd-transfers refused the request (limit): " + limit.message
        )
    }

    func testEveryExplanationIsOneLine() {
        let errors: [ClientError] = [
            .connect(path: "/p", errno: ENOENT), .connect(path: "/p", errno: ECONNREFUSED), .connect(path: "/p", errno: EACCES),
            .connect(path: "/p", errno: ENAMETOOLONG), .connect(path: "/p", errno: EIO), .io(call: "recv", errno: ECONNRESET), .closed,
            .malformedReply("x"), .refused(ProtocolError(.notFound, "no job x")),
        ]
        for error in errors {
            for daemon in [ServingDaemon.reachd, .transfers(system: true), .transfers(system: false)] {
                XCTAssertFalse(error.explained(talkingTo: daemon).contains("\n"), "\(error)")
            }
        }
    }
}
