import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ReachdModel
import ReachdMonitor

/// One RFC 8908 query: `GET` the announced API with `Accept: application/captive+json`, over TLS verified
/// against the system's trust store (never plain http: the announcement is only taken when https), no
/// redirect followed, at most `CaptivePortalStatus.maximumBody` bytes read. The host name is resolved by
/// reachd's own resolver and handed to async-http-client as a DNS override, so the certificate is still
/// checked against the name.
enum CaptivePortalFetch {
    /// Why a query got no answer.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func status(of url: String, resolver: HostResolver, group: any EventLoopGroup, timeout: TimeAmount) async -> Result<CaptivePortalStatus, Failure> {
        guard let host = URL(string: url)?.host, !host.isEmpty else { return .failure(Failure("no host in the URL")) }
        let bareHost = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        guard case .addresses(let addresses) = await resolver.resolve(bareHost), let address = addresses.first else {
            return .failure(Failure("\(bareHost) does not resolve"))
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: .makeClientConfiguration(),
            redirectConfiguration: .disallow,
            timeout: .init(connect: timeout, read: timeout)
        )
        configuration.dnsOverride = [bareHost: address.description]
        let client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
        let result = await query(url, client: client, timeout: timeout)
        try? await client.shutdown()
        return result
    }

    private static func query(_ url: String, client: HTTPClient, timeout: TimeAmount) async -> Result<CaptivePortalStatus, Failure> {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/captive+json")
        do {
            let response = try await client.execute(request, timeout: timeout)
            guard response.status == .ok else { return .failure(Failure("HTTP status \(response.status.code)")) }
            let body = try await response.body.collect(upTo: CaptivePortalStatus.maximumBody)
            return CaptivePortalStatus.parse(Array(body.readableBytesView)).mapError { Failure("\($0)") }
        } catch {
            return .failure(Failure("\(error)"))
        }
    }
}
