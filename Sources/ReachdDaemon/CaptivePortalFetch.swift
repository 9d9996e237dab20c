import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ReachdModel
import ReachdMonitor
import ReachdServiceKit
import ReachdSystem

/// One RFC 8908 query: `GET` the announced API with `Accept: application/captive+json`, over TLS verified
/// against the system's trust store (never plain http: the announcement is only taken when https), no
/// redirect followed, at most `CaptivePortalStatus.maximumBody` bytes read, the whole exchange (connecting,
/// the answer's head and its body) within `timeout`. The connection goes only to an address
/// `CaptivePortalTarget` accepts: the URL's IP literal, or the first acceptable address reachd's own resolver
/// gives for the name, handed to async-http-client as a DNS override (so the certificate is still checked
/// against the name).
enum CaptivePortalFetch {
    /// Why a query got no answer.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        /// The API's address is one reachd refuses (`CaptivePortalTarget`): nothing was sent.
        var refused = false
        init(_ description: String, refused: Bool = false) {
            self.description = description
            self.refused = refused
        }
    }

    /// The bound on one whole exchange.
    static let timeout = TimeAmount.seconds(10)

    /// Queries `url`, refusing to connect to this host's `ownAddresses` and the addresses `CaptivePortalTarget` refuses.
    static func status(
        of url: String, ownAddresses: Set<IPAddress>, resolver: HostResolver, group: any EventLoopGroup
    ) async -> Result<CaptivePortalStatus, Failure> {
        guard let host = URL(string: url)?.host, !host.isEmpty else { return .failure(Failure("no host in the URL")) }
        let bareHost = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let candidates: [IPAddress]
        if let literal = IPAddress(bareHost) {
            candidates = [literal]
        } else {
            guard case .addresses(let addresses) = await resolver.resolve(bareHost) else {
                return .failure(Failure("\(bareHost) does not resolve"))
            }
            candidates = addresses
        }
        switch CaptivePortalTarget.choose(from: candidates, ownAddresses: ownAddresses) {
        case .refused(let why):
            return .failure(Failure("refused: \(why)", refused: true))
        case .connect(let address):
            return await exchange(url, host: bareHost, address: address, group: group, deadline: .now() + timeout)
        }
    }

    /// The exchange itself, below the address check (tests call it on loopback): `GET url` connecting to
    /// `address` for `host`, ended when `deadline` passes, whatever the server does.
    static func exchange(
        _ url: String, host: String, address: IPAddress, group: any EventLoopGroup, deadline: NIODeadline
    ) async -> Result<CaptivePortalStatus, Failure> {
        let timeout = deadline - .now()
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: .makeClientConfiguration(),
            redirectConfiguration: .disallow,
            timeout: .init(connect: timeout, read: timeout)
        )
        configuration.dnsOverride = [host: address.description]
        let client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
        let result = await query(url, client: client, deadline: deadline)
        try? await client.shutdown()
        return result
    }

    private static func query(_ url: String, client: HTTPClient, deadline: NIODeadline) async -> Result<CaptivePortalStatus, Failure> {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/captive+json")
        do {
            let response = try await client.execute(request, deadline: deadline)
            guard response.status == .ok else { return .failure(Failure("HTTP status \(response.status.code)")) }
            let body = try await collect(response.body, by: deadline, timers: client.eventLoopGroup)
            return CaptivePortalStatus.parse(Array(body.readableBytesView)).mapError { Failure("\($0)") }
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            return .failure(deadlineFailure)
        } catch let failure as Failure {
            return .failure(failure)
        } catch {
            return .failure(Failure("\(error)"))
        }
    }

    /// The body, at most `CaptivePortalStatus.maximumBody` bytes, read before `deadline` (async-http-client's
    /// deadline ends with the answer's head; a server trickling the body is cut off here), timed by `timers`' loops.
    private static func collect(
        _ body: HTTPClientResponse.Body, by deadline: NIODeadline, timers: any EventLoopGroup
    ) async throws -> ByteBuffer {
        try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await body.collect(upTo: CaptivePortalStatus.maximumBody) }
            group.addTask {
                try await Sleeper.eventLoops(timers).sleep(for: Duration(deadline - .now()))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let buffer = first else { throw deadlineFailure }
            return buffer
        }
    }

    private static var deadlineFailure: Failure { Failure("no complete answer before the deadline") }
}
