import CNetlink
import ReachdClient
import ReachdModel
#if canImport(Glibc)
import Glibc
#endif

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The daemon under test, started as a child process.
final class Daemon {
    let pid: pid_t
    let socket: String

    init(binary: String, socket: String, config: String? = nil) throws {
        self.socket = socket
        var child: pid_t = 0
        let args = [binary, "--socket", socket, "--log-level", "warning", "--bus", "none", "--networkmanager", "none"]
            + (config.map { ["--config", $0] } ?? [])
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        guard posix_spawn(&child, binary, nil, nil, &argv, environ) == 0 else { throw BenchError("cannot start \(binary)") }
        pid = child
        for _ in 0..<500 {
            if (try? ReachdConnection(path: socket)) != nil { return }
            usleep(10_000)
        }
        throw BenchError("reachd did not open \(socket)")
    }

    private var stopped = false

    func stop() {
        guard !stopped else { return }
        stopped = true
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// utime+stime ticks and voluntary+involuntary context switches, summed over all threads.
    func usage() -> (ticks: Int, switches: Int) {
        let stat = read("/proc/\(pid)/stat").split(separator: ")").last?.split(separator: " ") ?? []
        let ticks = (Int(stat.count > 12 ? stat[11] : "0") ?? 0) + (Int(stat.count > 12 ? stat[12] : "0") ?? 0)
        var switches = 0
        if let dir = opendir("/proc/\(pid)/task") {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard name.first?.isNumber == true else { continue }
                for line in read("/proc/\(pid)/task/\(name)/status").split(separator: "\n") where line.contains("ctxt_switches") {
                    switches += Int(line.split(whereSeparator: { $0 == "\t" || $0 == " " }).last ?? "") ?? 0
                }
            }
            closedir(dir)
        }
        return (ticks, switches)
    }

    func rssKB() -> Int {
        for line in read("/proc/\(pid)/status").split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }

    private func read(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n <= 0 { break }
            out += chunk.prefix(n)
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Flips a link's administrative state through libnl (a veth end: its peer loses or regains carrier).
/// Changes the benchmark makes with rtnetlink from its own process: a link's state (`set(up:)`), the default route.
final class LinkFlapper {
    private let socket: OpaquePointer
    private let name: String

    init(name: String) throws {
        guard let socket = nl_socket_alloc() else { throw BenchError("nl_socket_alloc") }
        guard nl_connect(socket, NETLINK_ROUTE) == 0 else { throw BenchError("nl_connect") }
        self.socket = socket
        self.name = name
    }

    deinit { nl_socket_free(socket) }

    func set(up: Bool) throws {
        var original: OpaquePointer?
        guard rtnl_link_get_kernel(socket, 0, name, &original) == 0, let original else { throw BenchError("no link \(name)") }
        defer { rtnl_link_put(original) }
        guard let change = rtnl_link_alloc() else { throw BenchError("rtnl_link_alloc") }
        defer { rtnl_link_put(change) }
        if up { rtnl_link_set_flags(change, 1) } else { rtnl_link_unset_flags(change, 1) }
        let rc = rtnl_link_change(socket, original, change, 0)
        guard rc == 0 else { throw BenchError("rtnl_link_change: \(String(cString: nl_geterror(rc)))") }
    }
}

/// Adds and deletes the watched link's IPv4 default route (via 192.0.2.1, metric 100) with rtnetlink from this
/// process, as `ip route` would, without a process to start and reap beside the daemon while it works.
extension LinkFlapper {
    func setDefaultRoute(through index: Int32, present: Bool) throws {
        guard let route = rtnl_route_alloc(), let nexthop = rtnl_route_nh_alloc() else { throw BenchError("rtnl_route_alloc") }
        defer { rtnl_route_put(route) }
        var destination: OpaquePointer?, gateway: OpaquePointer?
        guard nl_addr_parse("0.0.0.0/0", AF_INET, &destination) == 0, nl_addr_parse("192.0.2.1", AF_INET, &gateway) == 0 else {
            throw BenchError("nl_addr_parse")
        }
        defer { nl_addr_put(destination); nl_addr_put(gateway) }
        _ = rtnl_route_set_family(route, UInt8(AF_INET))
        rtnl_route_set_table(route, 254)
        rtnl_route_set_priority(route, 100)
        // As `ip route` (RTPROT_BOOT): a delete matches the protocol it is given.
        _ = rtnl_route_set_protocol(route, 3)
        _ = rtnl_route_set_dst(route, destination)
        rtnl_route_nh_set_ifindex(nexthop, index)
        rtnl_route_nh_set_gateway(nexthop, gateway)
        rtnl_route_add_nexthop(route, nexthop)
        let rc = present ? rtnl_route_add(socket, route, 0x400 /* NLM_F_CREATE */) : rtnl_route_delete(socket, route, 0)
        guard rc == 0 else { throw BenchError("default route \(present ? "add" : "delete"): \(String(cString: nl_geterror(rc)))") }
    }
}

/// Runs `binary` to its end, its standard output discarded; throws unless it exits with one of `okStatuses`.
func runProgram(_ binary: String, _ arguments: [String], okStatuses: Set<Int32> = [0]) throws {
    var child: pid_t = 0
    let args = [binary] + arguments
    var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
    defer { for arg in argv { free(arg) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    defer { posix_spawn_file_actions_destroy(&actions) }
    guard posix_spawn(&child, binary, &actions, nil, &argv, environ) == 0 else { throw BenchError("cannot run \(binary)") }
    var status: Int32 = 0
    waitpid(child, &status, 0)
    let code = (status >> 8) & 0xff
    guard okStatuses.contains(code) else { throw BenchError("\(args.joined(separator: " ")) exited \(code)") }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.down)))]
}

func ms(_ seconds: Double) -> String {
    let value = (seconds * 1000 * 1000).rounded() / 1000
    return "\(value)"
}

func raiseFileLimit() {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}
