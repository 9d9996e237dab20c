import Foundation
import ReachdModel
import XCTest

/// Debian's real NetworkManager for one test, on a private "system" bus, managing the lab's links.
///
/// - The bus: a dbus-daemon of type system listening on `DIR/system_bus_socket`, with a permissive policy, or
///   with `policies` the system bus's own defaults (dbus's system.conf: method calls and names refused unless a
///   file allows them) and those policy files, read in the order given; NetworkManager, nmcli, busctl and reachd
///   find it through `DBUS_SYSTEM_BUS_ADDRESS` (`environment`).
/// - NetworkManager runs in the lab's host network namespace (where reachd and the links are) and in a mount
///   namespace of its own: the test's own directories over /run and /var/lib/NetworkManager and a tmpfs over
///   /etc/NetworkManager (the machine's state and profiles stay out of it), /sys read-only (so it manages
///   devices without waiting for udev).
///   Only keyfile profiles from `DIR/profiles`; no DNS, hostname, polkit or connectivity checks.
/// - dnsmasq (`startDHCPServer`) serves DHCP in the lab's peer namespace, on the far end of a link.
///
/// `stop()` ends everything it started (by process id) and leaves no trace on the machine.
final class RealNetworkManager {
    static let managerBinary = "/usr/sbin/NetworkManager"
    static let nmcliBinary = "/usr/bin/nmcli"
    static let busctlBinary = "/usr/bin/busctl"
    static let dbusDaemonBinary = "/usr/bin/dbus-daemon"
    static let dnsmasqBinary = "/usr/sbin/dnsmasq"
    static let service = "org.freedesktop.NetworkManager"
    static let deviceInterface = "org.freedesktop.NetworkManager.Device"
    /// NMDeviceState: activated.
    static let activated: UInt32 = 100

    /// IPv4 of a profile: a fixed address and gateway, or DHCP.
    enum IPv4 {
        case manual(address: String, gateway: String)
        case auto
    }

    let lab: NetLab
    let directory: String
    var profiles: String { directory + "/profiles" }
    var logPath: String { directory + "/NetworkManager.log" }
    var dhcpLogPath: String { directory + "/dnsmasq.log" }
    var busAddress: String { "unix:path=\(directory)/system_bus_socket" }
    /// What NetworkManager, nmcli, busctl and reachd need to find the private system bus.
    var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": busAddress] }

    private var bus: SpawnedProcess?
    private var manager: SpawnedProcess?
    private var dhcpServer: SpawnedProcess?
    private let runMountExisted = FileManager.default.fileExists(atPath: "/run/mount")

    /// Skips the test (saying why) unless NetworkManager, nmcli, busctl and dbus-daemon are installed.
    static func requireInstalled() throws {
        for (binary, package) in [(managerBinary, "network-manager"), (nmcliBinary, "network-manager"),
                                  (busctlBinary, "systemd"), (dbusDaemonBinary, "dbus-daemon")]
        where !FileManager.default.isExecutableFile(atPath: binary) {
            throw XCTSkip("\(binary) is not installed (Debian package \(package)): the real NetworkManager cannot run")
        }
        for dir in ["/var/lib/NetworkManager", "/etc/NetworkManager"] where !FileManager.default.fileExists(atPath: dir) {
            throw XCTSkip("\(dir) does not exist: the machine's NetworkManager directories cannot be covered by the test's own")
        }
    }

    /// Writes NetworkManager's configuration under the lab's directory and starts the private system bus: permissive,
    /// or, with `policies` (paths of policy files), enforcing the system bus's defaults and those files in that order.
    init(lab: NetLab, policies: [String]? = nil) throws {
        try Self.requireInstalled()
        self.lab = lab
        directory = lab.directory + "/nm"
        let files = FileManager.default
        for dir in ["", "/conf.d", "/system-conf.d", "/state", "/run", "/var-lib"] {
            try files.createDirectory(atPath: directory + dir, withIntermediateDirectories: true)
        }
        try files.createDirectory(atPath: profiles, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try """
            [main]
            plugins=keyfile
            no-auto-default=*
            dns=none
            rc-manager=unmanaged
            hostname-mode=none
            auth-polkit=false

            [keyfile]
            path=\(profiles)

            [connectivity]
            enabled=false

            """.write(toFile: directory + "/NetworkManager.conf", atomically: true, encoding: .utf8)
        // Runs inside `ip netns exec HOST unshare -m --propagation private`: private mounts only. /run and
        // /var/lib/NetworkManager are directories of the test, kept across restarts (NetworkManager started
        // again takes over the devices it configured, as after a restart of the service).
        try """
            set -e
            mount --bind \(directory)/run /run
            mkdir -p /run/NetworkManager
            mount -o remount,bind,ro /sys
            mount --bind \(directory)/var-lib /var/lib/NetworkManager
            mount -t tmpfs tmpfs /etc/NetworkManager
            exec \(Self.managerBinary) --no-daemon --debug --config=\(directory)/NetworkManager.conf \
              --config-dir=\(directory)/conf.d --system-config-dir=\(directory)/system-conf.d \
              --intern-config=\(directory)/state/intern.conf --state-file=\(directory)/state/NetworkManager.state \
              --pid-file=\(directory)/state/NetworkManager.pid

            """.write(toFile: directory + "/inner.sh", atomically: true, encoding: .utf8)
        try startBus(policies: policies)
    }

    // MARK: - The private system bus

    /// The permissive default: anyone may own any name and call anything.
    private static let permissivePolicy = """
          <policy context="default">
            <allow user="*"/>
            <allow own="*"/>
            <allow send_type="method_call"/>
            <allow send_type="signal"/>
            <allow send_type="method_return"/>
            <allow send_type="error"/>
            <allow receive_type="method_call"/>
            <allow receive_type="signal"/>
            <allow receive_type="method_return"/>
            <allow receive_type="error"/>
          </policy>
        """

    /// The system bus's own default context (dbus 1.14's system.conf): names and method calls are holes that a
    /// service's policy file punches.
    private static let systemBusPolicy = """
          <policy context="default">
            <allow user="*"/>
            <deny own="*"/>
            <deny send_type="method_call"/>
            <allow send_type="signal"/>
            <allow send_requested_reply="true" send_type="method_return"/>
            <allow send_requested_reply="true" send_type="error"/>
            <allow receive_type="method_call"/>
            <allow receive_type="method_return"/>
            <allow receive_type="error"/>
            <allow receive_type="signal"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
          </policy>
        """

    private func startBus(policies: [String]?) throws {
        let policy = policies.map { paths in
            Self.systemBusPolicy + paths.map { "\n      <include>\($0)</include>" }.joined()
        } ?? Self.permissivePolicy
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>\(busAddress)</listen>
              <auth>EXTERNAL</auth>
            \(policy)
            </busconfig>

            """.write(toFile: directory + "/system-bus.conf", atomically: true, encoding: .utf8)
        // --print-address: written once the bus listens.
        let output = directory + "/system-bus.out"
        let process = try SpawnedProcess([Self.dbusDaemonBinary, "--config-file=\(directory)/system-bus.conf", "--nofork", "--nopidfile", "--print-address=1"],
                                environment: ProcessInfo.processInfo.environment, output: output)
        bus = process
        do {
            try waitUntil("the private system bus listens", timeout: 20) {
                guard process.isRunning else {
                    throw LabError("dbus-daemon exited: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
                }
                return ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("unix:path=")
            }
        } catch {
            stop()
            throw error
        }
    }

    // MARK: - Profiles

    /// Writes a keyfile profile (mode 600) for `interface`; `metered` nil leaves `connection.metered` unknown.
    /// Profiles are read when NetworkManager starts.
    func addProfile(_ id: String, interface: String, metered: ManagerMetered?, ipv4: IPv4) throws {
        var text = "[connection]\nid=\(id)\ntype=ethernet\ninterface-name=\(interface)\nautoconnect=true\n"
        if let metered { text += "metered=\(metered.rawValue)\n" }
        switch ipv4 {
        case .manual(let address, let gateway): text += "\n[ipv4]\nmethod=manual\naddress1=\(address),\(gateway)\n"
        case .auto: text += "\n[ipv4]\nmethod=auto\n"
        }
        text += "\n[ipv6]\nmethod=disabled\n"
        let path = "\(profiles)/\(id).nmconnection"
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw LabError("cannot write \(path)")
        }
    }

    // MARK: - NetworkManager

    /// Starts NetworkManager in the lab's host namespace and waits until it owns its name on the bus.
    func start() throws {
        guard manager == nil else { throw LabError("NetworkManager is already running") }
        // ip netns exec, unshare and sh all exec: the process is NetworkManager itself.
        let process = try SpawnedProcess(["/usr/sbin/ip", "netns", "exec", lab.host, "unshare", "--mount", "--propagation", "private",
                                 "/bin/sh", directory + "/inner.sh"],
                                environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new }, output: logPath)
        manager = process
        try waitUntil("NetworkManager on the bus", timeout: 20) {
            guard process.isRunning else { throw LabError("NetworkManager exited: \(log)") }
            return (try? busctl(["status", Self.service])) != nil
        }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The object path of the device for `interface` (GetDeviceByIpIface).
    func device(_ interface: String) throws -> String {
        let reply = try busctl(["call", Self.service, "/org/freedesktop/NetworkManager", Self.service, "GetDeviceByIpIface", "s", interface])
        // `o "/org/freedesktop/NetworkManager/Devices/2"`
        let parts = reply.split(separator: "\"")
        guard reply.hasPrefix("o "), parts.count >= 2 else { throw LabError("GetDeviceByIpIface(\(interface)): \(reply)") }
        return String(parts[1])
    }

    /// A `u` property of the device for `interface` (`State`, `Metered`, `DeviceType` …).
    func deviceProperty(_ interface: String, _ property: String) throws -> UInt32 {
        let reply = try busctl(["get-property", Self.service, try device(interface), Self.deviceInterface, property])
        guard reply.hasPrefix("u "), let value = UInt32(reply.dropFirst(2).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw LabError("\(property) of \(interface): \(reply)")
        }
        return value
    }

    /// NetworkManager's `Device.Metered` for `interface`, raw (NMMetered).
    func metered(_ interface: String) throws -> UInt32 { try deviceProperty(interface, "Metered") }

    /// Waits until the device for `interface` is activated (a profile applied); returns its `Metered`.
    @discardableResult
    func waitForActivation(_ interface: String, timeout: Double = 20) throws -> UInt32 {
        try waitUntil("\(interface) activated by NetworkManager", timeout: timeout) {
            (try? deviceProperty(interface, "State")) == Self.activated
        }
        return try metered(interface)
    }

    /// Waits until NetworkManager's `Device.Metered` for `interface` is `value`.
    func waitForMetered(_ interface: String, _ value: ManagerMetered, timeout: Double = 20) throws {
        try waitUntil("NetworkManager's Metered of \(interface) = \(value.rawValue) (\(value.name))", timeout: timeout) {
            (try? metered(interface)) == value.rawValue
        }
    }

    /// Runs nmcli against this NetworkManager; throws with its output when it fails.
    @discardableResult
    func nmcli(_ arguments: [String]) throws -> String { try run(Self.nmcliBinary, arguments) }

    /// Runs `busctl --system` on the private bus.
    @discardableResult
    func busctl(_ arguments: [String]) throws -> String { try run(Self.busctlBinary, ["--system"] + arguments) }

    // MARK: - DHCP

    /// Starts dnsmasq as the DHCP server (no DNS) on the far end of `interface` in the lab's peer namespace,
    /// which must have an address in `range`, handing out `range` with `options` (dnsmasq's
    /// `--dhcp-option-force` values, sent whether asked for or not); waits until it serves.
    func startDHCPServer(on interface: String, range: (String, String), options: [String]) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.dnsmasqBinary) else {
            throw XCTSkip("\(Self.dnsmasqBinary) is not installed (Debian package dnsmasq-base): no DHCP server for the test")
        }
        let process = try SpawnedProcess(["/usr/sbin/ip", "netns", "exec", lab.peer, Self.dnsmasqBinary, "--keep-in-foreground", "--conf-file=/dev/null",
                                 "--port=0", "--user=root", "--interface=\(interface)", "--bind-interfaces",
                                 "--dhcp-range=\(range.0),\(range.1),255.255.255.0,1h", "--dhcp-authoritative",
                                 "--dhcp-leasefile=\(directory)/dnsmasq.leases", "--pid-file", "--log-dhcp", "--log-facility=-"]
                                    + options.map { "--dhcp-option-force=\($0)" },
                                environment: ProcessInfo.processInfo.environment, output: dhcpLogPath)
        dhcpServer = process
        try waitUntil("dnsmasq serves DHCP", timeout: 20) {
            guard process.isRunning else { throw LabError("dnsmasq exited: \(dhcpLog)") }
            return dhcpLog.contains("DHCP, IP range")
        }
    }

    var dhcpLog: String { (try? String(contentsOfFile: dhcpLogPath, encoding: .utf8)) ?? "" }

    // MARK: - Teardown

    /// Stops dnsmasq, NetworkManager and the bus (SIGTERM, then SIGKILL after 10 s); idempotent.
    func stop() {
        for child in [dhcpServer, manager, bus].compactMap({ $0 }) { child.stop() }
        dhcpServer = nil
        manager = nil
        bus = nil
        // `mount` in a fresh mount namespace may create /run/mount (libmount's utab) on the shared /run.
        if !runMountExisted { rmdir("/run/mount") }
    }

    /// Stops NetworkManager only (the bus stays), as when it quits.
    func stopManager() {
        manager?.stop()
        manager = nil
    }

    // MARK: - Helpers

    /// Runs a program with the bus environment; throws with its output when it fails.
    private func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw LabError("`\(([executable] + arguments).joined(separator: " "))` failed (\(process.terminationStatus)): \(output)")
        }
        return output
    }

    /// `eventually`, with NetworkManager's log in the failure.
    func waitUntil(_ what: String, timeout: Double, _ condition: () throws -> Bool) throws {
        try eventually(what, timeout: timeout, detail: "NetworkManager's log:\n\(log.suffix(4000))", condition)
    }
}

/// A long-running child of the test, started with posix_spawn (stdin /dev/null, stdout and stderr to a file,
/// no other descriptors, default signal handling), stopped and reaped by its process id.
///
/// Not Foundation's Process: that notices a child's exit when the child's end of a socket it inherited is
/// closed, and then waits for the child, blocking the one thread that serves every Process. A child that closes
/// its inherited descriptors at startup (dnsmasq does) stalls that thread until it really exits, and with it
/// every other Process's exit (busctl, nmcli, reachctl hang in waitUntilExit).
final class SpawnedProcess {
    let pid: pid_t
    private var exited = false

    init(_ arguments: [String], environment: [String: String], output: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // glibc declares posix_spawn_file_actions_addclosefrom_np only with _GNU_SOURCE: look it up.
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np"),
              unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3) == 0 else {
            throw LabError("posix_spawn_file_actions_addclosefrom_np is not available")
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t(), none = sigset_t()
        sigfillset(&all)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard rc == 0 else { throw LabError("cannot start \(arguments[0]): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    /// Reaps the child when it has exited.
    var isRunning: Bool {
        guard !exited else { return false }
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        if rc == 0 || (rc < 0 && errno == EINTR) { return true }
        exited = true
        return false
    }

    /// SIGTERM, SIGKILL after 10 s; waits until it is reaped.
    func stop() {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while isRunning && Date() < deadline { usleep(10_000) }
        guard isRunning else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        exited = true
    }

    deinit { stop() }
}
