import Synchronization

/// True for the first `take` only: of two things that race (a write and its deadline, the running transfers and the
/// sleep's grace), the one that comes first decides.
final class FirstCall: Sendable {
    private let taken = Mutex(false)

    func take() -> Bool { taken.withLock { taken in defer { taken = true }; return !taken } }
}
