import ArgumentParser
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// `--proxy`, and the proxy environment it stands in for (download add, upload add, fetch).
struct ProxyOption: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The proxy for this transfer: http://[USER:PASSWORD@]HOST[:PORT], socks5://HOST[:PORT], socks5h://HOST[:PORT], or none.",
        discussion: "Without it, your http_proxy, https_proxy, all_proxy and no_proxy apply, as curl reads them; without those, the instance's own."))
    var proxy: String?

    func validate() throws {
        guard let proxy else { return }
        do { try JobProxy.validate(proxy) } catch { throw ValidationError("--proxy: \(error)") }
    }

    /// The job's own proxy for `url`: `--proxy`, else what this shell's proxy variables say for it (`none` when they
    /// exclude it), else nil: the instance decides.
    func asked(for url: String) throws -> String? {
        if let proxy { return proxy }
        var variables: [String: String] = [:]
        for name in ProxySettings.environmentNames {
            if let value = getenv(name) { variables[name] = String(cString: value) }
        }
        let (settings, unusable) = ProxySettings.environment(variables)
        guard let target = try? TransferURL(url) else { return nil }
        if let problem = unusable[target.scheme], settings?.noProxy.excludes(host: target.host) != true {
            throw ValidationError("\(problem) (or give --proxy)")
        }
        guard let settings else { return nil }
        return settings.proxy(for: target)?.url ?? JobProxy.none
    }
}
