@testable import ReachdMonitor
import XCTest

/// Which directories are watched, from which exist, and what their events ask for.
final class NetworkdWatchPlanTests: XCTestCase {
    private let root = "/run/systemd/netif"

    func testBothDirectoriesPresentWatchNoParent() {
        let plan = NetworkdWatchPlan(root: root, present: [root, "/run/systemd", "\(root)/leases", "\(root)/links"])
        XCTAssertEqual(plan.watches, ["\(root)/leases": .files, "\(root)/links": .files])
    }

    func testAMissingDirectoryIsAwaitedInTheRoot() {
        let plan = NetworkdWatchPlan(root: root, present: [root, "/run/systemd", "\(root)/leases"])
        XCTAssertEqual(plan.watches, ["\(root)/leases": .files, root: .arrival(["links"])])
        let none = NetworkdWatchPlan(root: root, present: [root, "/run/systemd"])
        XCTAssertEqual(none.watches, [root: .arrival(["leases", "links"])])
    }

    func testAMissingRootIsAwaitedInItsParent() {
        XCTAssertEqual(NetworkdWatchPlan(root: root, present: ["/run/systemd"]).watches, ["/run/systemd": .arrival(["netif"])])
        XCTAssertEqual(NetworkdWatchPlan(root: root, present: []).watches, [:])
        XCTAssertEqual(NetworkdWatchPlan.candidates(root: root), ["\(root)/leases", "\(root)/links", root, "/run/systemd"])
    }

    /// Files in `leases/` and `links/` name a link; in a parent, only an awaited name counts.
    func testReactions() {
        let plan = NetworkdWatchPlan(root: root, present: [root, "\(root)/leases"])
        XCTAssertEqual(plan.reaction(to: Array("12".utf8), in: "\(root)/leases"), .readLink(12))
        XCTAssertEqual(plan.reaction(to: Array(".#12abc".utf8), in: "\(root)/leases"), .nothing)
        XCTAssertEqual(plan.reaction(to: Array("99999999999".utf8), in: "\(root)/leases"), .nothing)
        XCTAssertEqual(plan.reaction(to: Array("links".utf8), in: root), .rescan)
        XCTAssertEqual(plan.reaction(to: Array("state".utf8), in: root), .nothing)
        XCTAssertEqual(plan.reaction(to: Array("leases".utf8), in: root), .nothing, "leases/ is watched already")
        XCTAssertEqual(plan.reaction(to: Array("3".utf8), in: "/elsewhere"), .nothing)
    }
}
