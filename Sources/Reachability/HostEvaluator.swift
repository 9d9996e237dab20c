import Foundation
import ReachdConfig
import ReachdModel
import ReachdNetlink
import Synchronization

/// In-process judging of a host target: the name is resolved with the system resolver (again, on a thread
/// of its own, whenever the internet path changes), and the kernel's route to each address decides.
final class HostEvaluator: Sendable {
    private struct State {
        var resolution: Resolution
        var snapshot = NetworkSnapshot()
        var internet: Verdict?
    }

    private let host: String
    private let judge: HostVerdict
    private let internetJudge: InternetVerdict
    private let lookup: Mutex<RouteLookup>
    private let state: Mutex<State>

    /// Resolves `host` now (blocking) and opens the route-lookup socket in the calling thread's namespace.
    init(host: String, configuration: Configuration) throws {
        self.host = host
        self.judge = configuration.hostJudge
        self.internetJudge = InternetVerdict(classifier: configuration.classifier)
        self.lookup = Mutex(try RouteLookup())
        self.state = Mutex(State(resolution: SystemResolver.resolve(host)))
    }

    /// The host's verdict for `snapshot`; after a change of the internet path the name is resolved again in
    /// the background and `onReresolved` gets the verdict with the new addresses.
    func verdict(for snapshot: NetworkSnapshot, onReresolved: @escaping @Sendable (Verdict) -> Void) -> Verdict {
        let internet = internetJudge.verdict(for: snapshot)
        let pathChanged = state.withLock { state -> Bool in
            defer { state.internet = internet }
            state.snapshot = snapshot
            return state.internet != nil && state.internet != internet
        }
        if pathChanged {
            let thread = Thread { [self] in
                let fresh = SystemResolver.resolve(host)
                state.withLock { $0.resolution = fresh }
                onReresolved(current())
            }
            thread.name = "reachability-resolver"
            thread.start()
        }
        return current()
    }

    private func current() -> Verdict {
        let (resolution, snapshot) = state.withLock { ($0.resolution, $0.snapshot) }
        var decisions: [IPAddress: RouteDecision] = [:]
        if case .addresses(let addresses) = resolution {
            lookup.withLock { lookup in
                for address in addresses { decisions[address] = lookup.lookup(address) }
            }
        }
        return judge.verdict(host: host, resolution: resolution, decisions: decisions, in: snapshot)
    }
}
