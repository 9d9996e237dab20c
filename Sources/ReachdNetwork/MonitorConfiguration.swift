import Foundation
import Logging
import ReachdConfig

/// The configuration path monitors judge with: the file `REACHD_CONFIG` names, else reachd's own
/// `/etc/reachd/reachd.toml` where it exists, else the defaults. A file that cannot be read or parsed is
/// reported (standard error, through swift-log) and the defaults are used: Apple's initialisers cannot throw.
enum MonitorConfiguration {
    static let systemPath = "/etc/reachd/reachd.toml"

    static func load(environment: [String: String] = ProcessInfo.processInfo.environment) -> Configuration {
        let path = environment["REACHD_CONFIG"] ?? (FileManager.default.fileExists(atPath: systemPath) ? systemPath : nil)
        guard let path else { return Configuration() }
        do {
            return try Configuration.load(path: path)
        } catch {
            Logger(label: "reachd-network").error("\(error); path monitors judge with the default configuration")
            return Configuration()
        }
    }
}
