import ReachdModel
@testable import ReachdNetlink
import XCTest

/// Which links a snapshot lost, and which default routes the kernel leaves after that loss: the snapshot
/// published before the routes are read again.
final class LinkLossTests: XCTestCase {
    private func link(_ index: Int32, up: Bool) -> LinkInfo {
        LinkInfo(index: index, name: "l\(index)", flags: up ? [.up, .running] : [])
    }

    private func route(_ family: IPAddress.Family, table: UInt32 = Route.mainTable, through links: [Int32]) -> Route {
        Route(family: family, table: table, nexthops: links.map { Nexthop(interfaceIndex: $0) })
    }

    func testNoLossWhenLinksStayUpOrComeUp() {
        XCTAssertNil(LinkLoss(from: [1: link(1, up: true), 2: link(2, up: false)], to: [1: link(1, up: true), 2: link(2, up: true), 3: link(3, up: true)]))
    }

    func testLinksThatWentDownOrAway() throws {
        let loss = try XCTUnwrap(LinkLoss(
            from: [1: link(1, up: true), 2: link(2, up: true), 3: link(3, up: false)],
            to: [1: link(1, up: false), 3: link(3, up: false)]
        ))
        XCTAssertEqual(loss.down, [1])
        XCTAssertEqual(loss.goneLinks, [2])
        XCTAssertTrue(loss.gone)
    }

    func testALinkSeenDownInBetweenIsLostThoughUpAgain() throws {
        let up = [1: link(1, up: true), 2: link(2, up: true)] as [Int32: LinkInfo]
        let loss = try XCTUnwrap(LinkLoss(from: up, to: up, seenDown: [1]))
        XCTAssertEqual(loss.down, [1])
        XCTAssertEqual(loss.survivors(of: [route(.ipv4, through: [1]), route(.ipv4, table: 10, through: [1, 2])], links: up),
                       [route(.ipv4, table: 10, through: [1, 2])])
        XCTAssertNil(LinkLoss(from: [1: link(1, up: false)], to: [1: link(1, up: false)], seenDown: [1]), "down all along: nothing lost now")
    }

    func testSurvivorsAreWhatTheKernelLeavesOfEachFamily() throws {
        // 1 went down, 2 is gone, 3 is up, 4 was down already (not lost now).
        let now: [Int32: LinkInfo] = [1: link(1, up: false), 3: link(3, up: true), 4: link(4, up: false)]
        let loss = try XCTUnwrap(LinkLoss(
            from: [1: link(1, up: true), 2: link(2, up: true), 3: link(3, up: true), 4: link(4, up: false)],
            to: now
        ))
        let routes = [
            route(.ipv4, through: [1]),
            route(.ipv6, through: [1]),
            route(.ipv4, table: 10, through: [2]),
            route(.ipv4, table: 11, through: [1, 3]),
            route(.ipv4, table: 12, through: [2, 3]),
            route(.ipv6, table: 13, through: [2, 3]),
            route(.ipv6, table: 14, through: [1, 3]),
            route(.ipv4, table: 15, through: [1, 4]),
            route(.ipv4, table: 16, through: [4]),
            route(.ipv4, through: [3]),
            Route(family: .ipv4, type: .unreachable),
        ]
        XCTAssertEqual(loss.survivors(of: routes, links: now), [
            route(.ipv4, table: 11, through: [1, 3]), // a live hop keeps the route, with its dead one
            route(.ipv6, table: 13, through: [3]), // IPv6: only the deleted link's hop goes
            route(.ipv6, table: 14, through: [1, 3]),
            route(.ipv4, table: 16, through: [4]), // no hop through a lost link: as it was
            route(.ipv4, through: [3]),
            Route(family: .ipv4, type: .unreachable),
        ])
    }
}
