import Logging
import NIOCore
import ReachdModel
import ReachdMonitor
import ReachdServiceKit
import ReachdSystem
import Synchronization

/// Asks the captive-portal API the internet path's network announced (RFC 8910, as networkd records it) what
/// it says (RFC 8908), when the announcement or the path changes and then on `CaptivePortalSchedule`'s
/// timetable, and gives each answer to the verdicts (`NetworkView.update(portalStatus:round:)`): the
/// connectivity is `portal` while the API says captive, `full` when it says not. It only ever contacts the
/// announced URL, at an address `CaptivePortalTarget` accepts, one query at a time. Each round carries its
/// number to the verdicts, which ignore a round older than the newest (a cancelled round that lands late).
final class CaptivePortalMonitor: InternetVerdictFollower {
    /// What a round of queries is about: a new API or another path starts a new round.
    private struct PathKey: Equatable {
        var apiURL: String
        var interface: String?
    }

    private struct State {
        var path: PathKey?
        var round: UInt64 = 0
        var running: Task<Void, Never>?
    }

    private let view: NetworkView
    private let group: any EventLoopGroup
    private let logger: Logger
    private let state = Mutex(State())

    init(view: NetworkView, group: any EventLoopGroup, logger: Logger) {
        self.view = view
        self.group = group
        self.logger = logger
    }

    /// Called with every published internet verdict (under the hub's lock: it must not call the hub or the view).
    func verdictChanged(_ verdict: Verdict) {
        let key = verdict.reachable ? verdict.captivePortal.map { PathKey(apiURL: $0.apiURL, interface: verdict.interface) } : nil
        state.withLock { state in
            guard state.path != key else { return }
            state.path = key
            state.round += 1
            state.running?.cancel()
            let round = state.round
            state.running = Task { await self.run(key, round: round) }
        }
    }

    func stop() {
        state.withLock { state in
            state.round += 1
            state.running?.cancel()
        }
    }

    /// Forgets the previous path's answer, then queries `key`'s API until the round ends.
    private func run(_ key: PathKey?, round: UInt64) async {
        view.update(portalStatus: [:], round: round)
        guard let key else { return }
        var failures = 0
        var last: CaptivePortalStatus?
        while !Task.isCancelled {
            let result = await CaptivePortalFetch.status(
                of: key.apiURL, ownAddresses: view.hub.snapshot.ownAddresses, resolver: view.resolver, group: group
            )
            guard state.withLock({ $0.round == round }) else { return }
            var answer: CaptivePortalStatus?
            switch result {
            case .success(let status):
                failures = 0
                answer = status
                if status != last {
                    logger.info("captive portal API", metadata: Self.metadata(key.apiURL, status))
                    view.update(portalStatus: [key.apiURL: status], round: round)
                    last = status
                }
            case .failure(let why):
                failures += 1
                let message: Logger.Message = why.refused ? "captive portal API refused: not contacted" : "captive portal API: no answer"
                logger.warning(message, metadata: ["url": "\(key.apiURL.terminalSafe)", "error": "\(why.description.terminalSafe)"])
            }
            let delay = CaptivePortalSchedule.secondsUntilNextQuery(after: answer, failures: failures)
            try? await Sleeper.eventLoops(group).sleep(for: .seconds(delay))
        }
    }

    private static func metadata(_ url: String, _ status: CaptivePortalStatus) -> Logger.Metadata {
        [
            "url": "\(url.terminalSafe)",
            "captive": "\(status.captive)",
            "user-portal-url": "\(status.userPortalURL?.terminalSafe ?? "-")",
            "seconds-remaining": "\(status.secondsRemaining.map(String.init) ?? "-")",
            "bytes-remaining": "\(status.bytesRemaining.map(String.init) ?? "-")",
        ]
    }
}
