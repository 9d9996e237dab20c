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
            ClientError(.connect(path: "/run/reachd/reachd.sock", errno: ENOENT), talkingTo: .reachd).explained,
            "reachd is not running (no socket at /run/reachd/reachd.sock): start it with \"systemctl start reachd.socket\" "
                + "(or run reachd yourself), or pass --socket PATH"
        )
        XCTAssertEqual(
            ClientError(.connect(path: "/run/user/1000/reachd-transfers.sock", errno: ECONNREFUSED), talkingTo: .transfers(system: false)).explained,
            "your reachd-transfers is not running (nothing listens at /run/user/1000/reachd-transfers.sock): start it with "
                + "\"systemctl --user start reachd-transfers.socket\", or use the system instance with --system"
        )
        let system = ClientError(.connect(path: "/run/reachd/transfers.sock", errno: ENOENT), talkingTo: .transfers(system: true)).explained
        XCTAssertTrue(system.hasPrefix("the system reachd-transfers is not running"), system)
        XCTAssertTrue(system.contains("systemctl start reachd-transfers.socket"), system)
    }

    func testASocketClosedToTheUserNamesTheOnesTheyMayUse() {
        let message = ClientError(.connect(path: "/run/user/1001/reachd.sock", errno: EACCES), talkingTo: .reachd).explained
        XCTAssertEqual(message, "you may not connect to /run/user/1001/reachd.sock (Permission denied): it is another user's, or in a "
            + "directory closed to you; use the system socket /run/reachd/reachd.sock or your own (drop --socket and REACHD_SOCKET)")
        let transfers = ClientError(.connect(path: "/run/reachd/transfers.sock", errno: EACCES), talkingTo: .transfers(system: true)).explained
        XCTAssertTrue(transfers.contains("use your own instance (without --system"), transfers)
    }

    func testAnUnknownJobSaysWhereTheJobsAre() {
        let refusal = ClientError.Failure.refused(ProtocolError(.notFound, "no job 0123456789abcdef"))
        XCTAssertEqual(
            ClientError(refusal, talkingTo: .transfers(system: false)).explained,
            "your reachd-transfers refused the request (not_found): no job 0123456789abcdef; \"reachctl download list\" lists your own "
                + "instance's jobs (those queued with --system, or as root, are in the system instance)"
        )
        XCTAssertTrue(ClientError(refusal, talkingTo: .transfers(system: true)).explained.contains("reachctl download list --system"))
    }

    /// Refusals whose message already says what to do (a full queue names max_jobs and clean) pass unchanged.
    func testOtherRefusalsKeepTheDaemonsWords() {
        let limit = ProtocolError(.limit, "uid 1000 holds 1000 jobs, the most allowed ([downloads] max_jobs_per_user); remove finished ones")
        XCTAssertEqual(
            ClientError(.refused(limit), talkingTo: .transfers(system: false)).explained,
            "your reachd-transfers refused the request (limit): " + limit.message
        )
    }

    func testEveryExplanationIsOneLine() {
        let errors: [ClientError.Failure] = [
            .connect(path: "/p", errno: ENOENT), .connect(path: "/p", errno: ECONNREFUSED), .connect(path: "/p", errno: EACCES),
            .connect(path: "/p", errno: ENAMETOOLONG), .connect(path: "/p", errno: EIO), .io(call: "recv", errno: ECONNRESET), .closed,
            .malformedReply("x"), .refused(ProtocolError(.notFound, "no job x")),
        ]
        for error in errors {
            for daemon in [ServingDaemon.reachd, .transfers(system: true), .transfers(system: false)] {
                XCTAssertFalse(ClientError(error, talkingTo: daemon).explained.contains("\n"), "\(error)")
            }
        }
    }

    /// The daemon named is the one given when the connection was made: nobody rewrites the text afterwards.
    func testTheErrorNamesTheDaemonTheConnectionWasMadeTo() {
        let path = "/nonexistent-\(getpid())/reachd-transfers.sock"
        XCTAssertThrowsError(try ReachdConnection(path: path, daemon: .transfers(system: false))) { error in
            guard let error = error as? ClientError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.daemon, .transfers(system: false))
            XCTAssertEqual(error.description, "cannot connect to your reachd-transfers at \(path): No such file or directory (is your reachd-transfers running?)")
            XCTAssertTrue(error.explained.hasPrefix("your reachd-transfers is not running (no socket at \(path))"), error.explained)
        }
        XCTAssertThrowsError(try ReachdConnection(path: path)) { error in
            XCTAssertEqual((error as? ClientError)?.description, "cannot connect to reachd at \(path): No such file or directory (is reachd running?)")
        }
    }
}
