import Logging
import NIOCore
import NIOPosix
import ReachdModel
import ReachdMonitor
import ReachdServiceKit
import ReachdSystem
import Synchronization

/// Runs the configured connectivity check after every change of the internet path (and, while it fails,
/// again with backoff; while it succeeds, every `intervalSeconds`), and gives each result to the hub.
/// It only ever contacts the configured URL.
final class ConnectivityProber: InternetVerdictFollower {
    private struct State {
        /// What the last check was about: a new path starts a new round and outdates running checks.
        var path: PathKey?
        var round = 0
        var running: Task<Void, Never>?
    }

    /// The parts of a verdict that make it another path (not the check's own result).
    private struct PathKey: Equatable {
        var reachable: Bool
        var interface: String?
        var family: IPAddress.Family?
        var gateways: [IPAddress?]

        init(_ verdict: Verdict) {
            reachable = verdict.reachable
            interface = verdict.interface
            family = verdict.family
            gateways = [verdict.ipv4.gateway, verdict.ipv6.gateway]
        }
    }

    private let check: ConnectivityCheck
    private let hub: VerdictHub
    private let resolver: HostResolver
    private let group: any EventLoopGroup
    private let logger: Logger
    private let state = Mutex(State())

    init(check: ConnectivityCheck, hub: VerdictHub, resolver: HostResolver, group: any EventLoopGroup, logger: Logger) {
        self.check = check
        self.hub = hub
        self.resolver = resolver
        self.group = group
        self.logger = logger
    }

    /// Called with every published internet verdict (under the hub's lock: it must not call the hub).
    func verdictChanged(_ verdict: Verdict) {
        let key = PathKey(verdict)
        state.withLock { state in
            guard state.path != key else { return }
            state.path = key
            state.round += 1
            state.running?.cancel()
            state.running = nil
            guard verdict.reachable else { return }
            let round = state.round
            state.running = Task { await self.run(round: round) }
        }
    }

    func stop() {
        state.withLock { state in
            state.round += 1
            state.running?.cancel()
        }
    }

    private func run(round: Int) async {
        var failures = 0
        while !Task.isCancelled {
            let result = await probeOnce()
            guard state.withLock({ $0.round == round }) else { return }
            logger.info("connectivity check", metadata: ["url": "\(check.url)", "result": "\(result.rawValue)"])
            hub.update(connectivity: result)
            let delay: Double
            if result == .full {
                failures = 0
                guard check.intervalSeconds > 0 else { return }
                delay = check.intervalSeconds
            } else {
                delay = check.retryDelay(afterFailures: failures)
                failures += 1
            }
            try? await Sleeper.eventLoops(group).sleep(for: .seconds(delay))
        }
    }

    private func probeOnce() async -> Connectivity {
        guard case .addresses(let addresses) = await resolver.resolve(check.url.host), let first = addresses.first,
              let address = try? SocketAddress(ipAddress: first.description, port: check.url.port)
        else { return .limited }
        let timeout = TimeAmount.milliseconds(Int64(check.timeoutSeconds * 1000))
        return check.connectivity(for: await HTTPProbe.get(check.url, at: address, timeout: timeout, group: group))
    }
}
