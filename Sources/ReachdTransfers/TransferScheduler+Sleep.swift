import ReachdTransferModel

extension TransferScheduler {
    /// How long the running transfers are waited for before the machine may sleep (logind's delay inhibitor is
    /// let go then, whatever is left).
    static var sleepGraceSeconds: Double { 1 }

    /// The machine is about to sleep: no transfer starts until `machineResumed`, and the running ones stop (their
    /// partial files flushed), waited for up to `sleepGraceSeconds`.
    func machineSleeps() async {
        guard !stopping else { return }
        asleep = true
        logger.info("the machine is going to sleep: \(running.count) running transfers stop")
        let tasks = Array(running.values)
        for id in Array(running.keys) { feed(.machineSleeps, to: id) }
        // Whichever comes first: a transfer that does not stop (a hung destination) never holds the sleep longer.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let first = FirstCall()
            Task {
                for task in tasks { await task.value }
                if first.take() { continuation.resume() }
            }
            Task {
                try? await Task.sleep(for: .seconds(Self.sleepGraceSeconds))
                if first.take() { continuation.resume() }
            }
        }
    }

    /// The machine woke: every job is decided again against the clock and the routes, and the queue goes on.
    func machineResumed() {
        guard asleep else { return }
        asleep = false
        logger.info("the machine resumed: the queue goes on")
        reschedule()
    }
}
