import ReachdTransferModel

/// The desktop's proxy settings, asked per job (xdg-desktop-portal's ProxyResolver) where neither the job nor the
/// instance names a proxy: when the job is added, when the service starts, and before each of its attempts. The
/// last answer holds while the portal gives none.
extension TransferScheduler {
    /// The desktop's answer for the job's URL, when it is asked for this job and the portal answers.
    func desktopAnswer(for job: Job) async -> DesktopProxy? {
        guard let resolver = settings.desktopProxies, job.proxy == nil else { return nil }
        return await resolver.lookup(job.url)
    }

    /// Asks again for a job being followed; a new answer moves the job's watch to the host it now depends on, shows
    /// the job's proxy, and decides the queue again.
    func askDesktop(about id: String) async {
        guard !stopping, let job = machines[id]?.job, let answer = await desktopAnswer(for: job),
              !stopping, let current = machines[id]?.job, answer != desktopAnswers[id] else { return }
        let host = proxies(of: current).gatingHost(for: current.url)
        desktopAnswers[id] = answer
        if jobHosts.host(of: id) != nil, proxies(of: current).gatingHost(for: current.url) != host {
            unwatchHost(of: id)
            watchHost(of: current)
        }
        let via = proxy(for: current)?.description
        if via != current.viaProxy { feed(.proxyChosen(via), to: id) }
        reschedule()
    }

    /// Asks for every followed job (its host watched) whose proxy the desktop decides, one after another (at start).
    func askDesktopAboutAll() {
        guard settings.desktopProxies != nil else { return }
        let ids = machines.values.filter { $0.job.proxy == nil && jobHosts.host(of: $0.job.id) != nil }.map(\.job.id)
        desktopQuestions = Task {
            for id in ids where !Task.isCancelled { await self.askDesktop(about: id) }
        }
    }
}
