import Logging
import ReachdConfig
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// The instance's proxies: `[downloads] proxy` and `no_proxy` when the configuration names a proxy, else the
/// service's own environment, as curl reads it (a unit's `Environment=`, the user manager's environment).
enum InstanceProxies {
    /// A proxy URL that cannot be used is an error at start, naming where it came from (never its text: it may
    /// hold a password).
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    static let environmentNames = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"]

    static func settings(configuration: Configuration, logger: Logger) throws -> ProxySettings? {
        let settings: ProxySettings?
        if let text = configuration.transferProxy {
            let server: ProxyServer
            do { server = try ProxyServer(text) } catch { throw Invalid(description: "downloads: \"proxy\": \(error)") }
            settings = ProxySettings(http: server, https: server, noProxy: NoProxyList(configuration.transferNoProxy ?? ""))
        } else {
            var variables: [String: String] = [:]
            for name in environmentNames { if let value = getenv(name) { variables[name] = String(cString: value) } }
            do { settings = try ProxySettings.environment(variables) } catch { throw Invalid(description: "the environment's \(error)") }
        }
        if let settings {
            let named = Set([settings.http, settings.https].compactMap { $0?.description }).sorted().joined(separator: ", ")
            logger.info("transfers go through the proxy \(named) (\(configuration.transferProxy == nil ? "environment" : "[downloads] proxy"))")
        }
        return settings
    }
}
