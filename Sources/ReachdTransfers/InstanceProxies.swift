import Logging
import ReachdConfig
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// The instance's proxies: `[downloads] proxy` and `no_proxy` when the configuration names a proxy, else the
/// service's own environment, as curl reads it (a unit's `Environment=`, the user manager's environment);
/// `proxy = "none"`: neither.
enum InstanceProxies {
    /// `[downloads] proxy` that cannot be used is an error at start (never quoting it: it may hold a password); a
    /// variable of the environment that cannot be used is logged, and its scheme goes without.
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    static func settings(configuration: Configuration, logger: Logger) throws -> ProxySettings? {
        let settings: ProxySettings?
        if configuration.transferProxy == JobProxy.none {
            // Explicitly none: the service's environment does not count either.
            settings = nil
        } else if let text = configuration.transferProxy {
            let server: ProxyServer
            do { server = try ProxyServer(text) } catch { throw Invalid(description: "downloads: \"proxy\": \(error)") }
            settings = ProxySettings(http: server, https: server, noProxy: NoProxyList(configuration.transferNoProxy ?? ""))
        } else {
            var variables: [String: String] = [:]
            for name in ProxySettings.environmentNames { if let value = getenv(name) { variables[name] = String(cString: value) } }
            let (found, unusable) = ProxySettings.environment(variables)
            settings = found
            for (scheme, problem) in unusable.sorted(by: { $0.key < $1.key }) {
                logger.error("the environment's \(problem): \(scheme) transfers go without a proxy of the environment's")
            }
        }
        if let settings {
            let named = Set([settings.http, settings.https].compactMap { $0?.description }).sorted().joined(separator: ", ")
            logger.info("transfers go through the proxy \(named) (\(configuration.transferProxy == nil ? "environment" : "[downloads] proxy"))")
        }
        return settings
    }
}
