import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ReachdModel
import ReachdMonitor
import ReachdProtocol
import ReachdTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif
@testable import ReachdDaemon

/// reachd's per-connection rule on a real socket (`PendingRequests`, docs/limits.md): the socket stops being read as
/// soon as `HostRequestLimits.perConnection` host requests wait, not only when a line after them comes, and is
/// read again once one is answered.
final class ClientHandlerReadingTests: XCTestCase {
    /// Holds every name lookup until opened.
    private final class Gate: @unchecked Sendable {
        private let condition = NSCondition()
        private var open = false

        func pass() {
            condition.lock()
            while !open { condition.wait() }
            condition.unlock()
        }

        func openUp() {
            condition.lock()
            open = true
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Waits up to 30 s (a loaded machine) for `condition`.
    private func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if try condition() { return true }
            usleep(10_000)
        }
        return try condition()
    }

    private func sendAll(_ text: String, to socket: Int32) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return XCTFail("send: errno \(errno)") }
            sent += n
        }
    }

    /// Reads reply lines until `count` came (30 s at most).
    private func readReplies(_ count: Int, from socket: Int32) throws -> [Reply] {
        try SocketLines.read(count, from: socket).map { try Reply.decode(line: $0) }
    }

    /// A connection served by a `ClientHandler` with `hosts` on a loop of its own; the client's end of it.
    private func serve(_ hosts: HostMonitor) throws -> (channel: any Channel, client: Int32, loop: any EventLoop, group: MultiThreadedEventLoopGroup) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends), 0)
        let loop = group.next()
        let registry = SubscriberRegistry(eventLoop: loop) { _ in }
        let hub = VerdictHub(engine: InternetVerdict())
        let channel = try ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ClientHandler(hub: hub, hosts: hosts, registry: registry, logger: .init(label: "test")))
                }
            }
            .withConnectedSocket(ends[0]).wait()
        return (channel, ends[1], loop, group)
    }

    func testTheSocketStopsBeingReadWhenTheLimitWaitsAndIsReadAgainAfterAnAnswer() throws {
        let gate = Gate()
        let resolver = HostResolver(threads: 1) { _ in
            gate.pass()
            return .addresses([IPAddress("192.0.2.9")!])
        }
        let hosts = HostMonitor(judge: HostVerdict(), refreshSeconds: 0, resolver: resolver, logger: .init(label: "test")) { addresses in
            addresses.map { _ in .refused(errno: ENETUNREACH) }
        }
        let (channel, client, _, group) = try serve(hosts)
        defer {
            gate.openUp()
            try? channel.close().wait()
            close(client)
            try? group.syncShutdownGracefully()
        }
        let autoRead = { try channel.getOption(ChannelOptions.autoRead).wait() }
        XCTAssertTrue(try autoRead())

        let limit = HostRequestLimits.perConnection
        let requests = (1...limit).map { "{\"op\":\"status\",\"id\":\($0),\"host\":\"h\($0).test\"}\n" }.joined()
        sendAll(requests, to: client)
        XCTAssertTrue(try eventually { try !autoRead() }, "\(limit) host requests wait and no line came after them: the socket is not read")

        gate.openUp()
        let answers = try readReplies(limit, from: client)
        XCTAssertEqual(Set(answers.compactMap { reply -> RequestID? in
            if case .status(let id, _) = reply { return id }
            return nil
        }), Set((1...limit).map { RequestID.number(Int64($0)) }))
        XCTAssertTrue(try eventually { try autoRead() }, "answered: the socket is read again")
        sendAll("{\"op\":\"ping\",\"id\":99}\n", to: client)
        XCTAssertEqual(try readReplies(1, from: client), [.pong(id: .number(99))])
        hosts.stop()
        let stopped = expectation(description: "resolver stopped")
        Task {
            await resolver.shutdown()
            stopped.fulfill()
        }
        wait(for: [stopped], timeout: 30)
    }

    /// A host's verdict that changes after the watch answered but before the connection is subscribed (its event went
    /// to the subscribers there were) reaches the new subscriber in its `subscribed` reply, not as an event encoded for
    /// it alone (50 subscribers of 200 hosts under a flapping link once held 13 MB of such events).
    func testAVerdictChangedWhileSubscribingIsInTheReply() throws {
        let gate = Gate()
        let resolver = HostResolver(threads: 1) { _ in
            gate.pass()
            return .addresses([IPAddress("192.0.2.9")!])
        }
        let routed = NIOLockedValueBox(false)
        let hosts = HostMonitor(judge: HostVerdict(), refreshSeconds: 0, resolver: resolver, logger: .init(label: "test")) { addresses in
            addresses.map { _ in
                routed.withLockedValue { $0 } ? .route(type: .unicast, interfaceIndex: 2, gateway: IPAddress("192.0.2.1"), source: nil)
                    : .refused(errno: ENETUNREACH)
            }
        }
        let wired = NetworkSnapshot(
            links: [LinkInfo(index: 2, name: "eth0", flags: [.up, .running, .lowerUp], carrier: true)],
            addresses: [InterfaceAddress(interfaceIndex: 2, address: IPAddress("192.0.2.2")!, prefixLength: 24)],
            defaultRoutes: [Route(family: .ipv4, nexthops: [Nexthop(interfaceIndex: 2, gateway: IPAddress("192.0.2.1"))])]
        )
        hosts.networkChanged(wired, internetChanged: false)
        let (channel, client, loop, group) = try serve(hosts)
        let release = DispatchSemaphore(value: 0)
        defer {
            gate.openUp()
            release.signal()
            try? channel.close().wait()
            close(client)
            try? group.syncShutdownGracefully()
        }
        // The handler's peer is root: its hosts are `.user(0)`'s.
        sendAll("{\"op\":\"subscribe\",\"id\":1,\"host\":\"h.test\"}\n", to: client)
        XCTAssertTrue(eventually { hosts.watchedCount == 1 }, "the watch started")
        // The loop is held while the watch answers and the verdict changes: the subscription waits for it.
        let held = DispatchSemaphore(value: 0)
        loop.execute {
            held.signal()
            _ = release.wait(timeout: .now() + 60)
        }
        XCTAssertEqual(held.wait(timeout: .now() + 30), .success)
        gate.openUp()
        XCTAssertTrue(eventually { hosts.currentVerdicts(of: ["h.test"], requester: .user(0))["h.test"] != nil }, "the watch answered")
        let answered = try XCTUnwrap(hosts.currentVerdicts(of: ["h.test"], requester: .user(0))["h.test"])
        routed.withLockedValue { $0 = true }
        // The hosts are judged again on a thread of the monitor's own.
        hosts.networkChanged(wired, internetChanged: false)
        XCTAssertTrue(eventually { (hosts.currentVerdicts(of: ["h.test"], requester: .user(0))["h.test"]?.sequence ?? 0) > answered.sequence }, "judged again")
        let changed = try XCTUnwrap(hosts.currentVerdicts(of: ["h.test"], requester: .user(0))["h.test"])
        release.signal()

        let replies = try readReplies(1, from: client)
        guard replies.count == 1, case .subscribed(_, let sent) = replies[0] else {
            return XCTFail("expected the subscribed reply: \(replies)")
        }
        XCTAssertEqual(sent, [changed], "the change that came while subscribing, not the verdict the watch answered")
        hosts.stop()
    }
}
