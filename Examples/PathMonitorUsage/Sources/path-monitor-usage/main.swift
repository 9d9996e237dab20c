// Apple's documented use of NWPathMonitor, unchanged: a handler on a dispatch queue, a monitor that requires
// cellular, and `for await` over a monitor that prohibits cellular. One line per update.
#if canImport(Network)
import Network
#else
import ReachdNetwork
#endif
import Dispatch
import Foundation

/// One line, written at once (stdout is a pipe in the test): which monitor, then the path as Apple's API gives it.
func report(_ monitor: String, _ path: NWPath) {
    let interfaces = path.availableInterfaces.map(\.name).joined(separator: ",")
    let gateways = path.gateways.map { "\($0)" }.joined(separator: ",")
    let line = "\(monitor) status=\(path.status) expensive=\(path.isExpensive) constrained=\(path.isConstrained)"
        + " wired=\(path.usesInterfaceType(.wiredEthernet)) cellular=\(path.usesInterfaceType(.cellular))"
        + " wifi=\(path.usesInterfaceType(.wifi)) ipv4=\(path.supportsIPv4) ipv6=\(path.supportsIPv6)"
        + " interfaces=\(interfaces) gateways=\(gateways)\n"
    FileHandle.standardOutput.write(Data(line.utf8))
}

let monitor = NWPathMonitor()
monitor.pathUpdateHandler = { path in
    report("all", path)
}
monitor.start(queue: DispatchQueue(label: "Monitor"))

let cellular = NWPathMonitor(requiredInterfaceType: .cellular)
cellular.pathUpdateHandler = { path in
    report("cellular", path)
}
cellular.start(queue: DispatchQueue(label: "CellularMonitor"))

for await path in NWPathMonitor(prohibitedInterfaceTypes: [.cellular]) {
    report("no-cellular", path)
}
