import Foundation
import ReachdClient
import ReachdProtocol
import ReachdTestSupport
import ReachdTransferClient
import ReachdTransferModel
import ReachdTransferProtocol
import XCTest

/// A lab for the transfer service: the host namespace reaches `mirror.test` (203.0.113.80 on the peer's
/// loopback) through `eth0` (unmetered, metric 100) and `wwan0` (metered, metric 200); servers run in the
/// peer namespace, reachd-transfers in the host namespace, never as root: by default as the system instance
/// (`--system`) under a system user of the lab's own, as the shipped unit runs it under `reachd-transfers`,
/// so that the tests, as root, are its clients; or as a real user's own instance (`startDaemon(user:)`).
final class TransferLab {
    static let serverAddress = "203.0.113.80"
    /// Tests/Support/upload_server.py: the upload target in the peer namespace.
    static let uploadServer = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Support/upload_server.py").standardized.path
    let lab: NetLab
    /// The system instance's user (a real one: the bus daemon admits no uid without a user database entry); `out` is theirs.
    private(set) var daemonUser = User(name: "", uid: 0, gid: 0, home: "")
    var daemonUID: UInt32 { daemonUser.uid }
    /// Its group: members are the system instance's clients.
    var daemonGID: UInt32 { daemonUser.gid }
    var www: String { lab.directory + "/www" }
    var out: String { lab.directory + "/out" }
    var stateDirectory: String { lab.directory + "/state" }
    var cacheDirectory: String { lab.directory + "/cache" }
    var socketPath: String { lab.directory + "/run/transfers.sock" }
    var daemonLog: String { lab.directory + "/transfers.log" }
    var serverLog: String { lab.directory + "/server.log" }
    private(set) var port = 0
    private var daemon: Process?
    private var servers: [Process] = []
    private var mounts: [String] = []
    private var users: [String] = []

    /// `eth0`: whether the unmetered uplink exists from the start.
    init(eth0: Bool = true) throws {
        lab = try NetLab.make()
        do {
            for dir in [www, out, stateDirectory, cacheDirectory, lab.directory + "/run"] {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            }
            daemonUser = try makeUser("d")
            try lab.run("chmod 755 \(lab.directory) \(www) \(out) \(lab.directory)/run && chown \(daemonUID):\(daemonGID) \(out)")
            try lab.peerIP("link set lo up")
            try lab.peerIP("addr add \(Self.serverAddress)/32 dev lo")
            try lab.addUplink("wwan0", "198.51.100", metric: 200)
            try lab.peerIP("addr add 198.51.100.1/24 dev wwan0")
            if eth0 { try addEth0() }
            try lab.hostsFile(["mirror.test": Self.serverAddress])
        } catch {
            for user in users { _ = try? lab.run("userdel \(user)") }
            lab.tearDown()
            throw error
        }
    }

    /// The unmetered uplink (again, after `ip link del`/down): link, peer address, default route.
    func addEth0() throws {
        try lab.addUplink("eth0", "192.0.2", metric: 100)
        try lab.peerIP("addr add 192.0.2.1/24 dev eth0")
    }

    /// Takes eth0 down (its routes go with it): traffic to mirror.test goes via wwan0.
    func eth0Down() throws { try lab.ip("link set eth0 down") }

    /// Brings eth0 back with its default route.
    func eth0Up() throws {
        try lab.ip("link set eth0 up")
        try lab.ip("route replace default via 192.0.2.1 dev eth0 metric 100")
    }

    func tearDown() {
        if let daemon, daemon.isRunning { kill(daemon.processIdentifier, SIGKILL); daemon.waitUntilExit() }
        for server in servers where server.isRunning {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        for mount in mounts { _ = try? lab.run("umount -l \(mount)") }
        for user in users { _ = try? lab.run("userdel \(user)") }
        lab.tearDown()
    }

    // MARK: Files

    /// Writes `bytes` pseudo-random bytes to www/NAME; returns their SHA-256.
    @discardableResult
    func serve(_ name: String, bytes: Int, seed: UInt64 = 1) throws -> String {
        var generator = SeededGenerator(seed: seed)
        var data = Data(count: bytes)
        data.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for i in 0..<words.count { words[i] = generator.next() }
            for i in (words.count * 8)..<bytes { raw[i] = UInt8(truncatingIfNeeded: generator.next()) }
        }
        try data.write(to: URL(fileURLWithPath: www + "/" + name))
        return try sha256(www + "/" + name)
    }

    func sha256(_ path: String) throws -> String {
        String(try lab.run("sha256sum \(path)").prefix(64))
    }

    /// A tmpfs of `size` (e.g. "2M") at out/NAME, the daemon's, unmounted at tear-down.
    func smallDisk(_ name: String, size: String) throws -> String {
        try smallDisk(at: out + "/" + name, size: size)
    }

    /// A tmpfs of `size` at `path` (the state directory, say), the daemon's, unmounted at tear-down.
    @discardableResult
    func smallDisk(at path: String, size: String) throws -> String {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try lab.run("mount -t tmpfs -o size=\(size),uid=\(daemonUID),gid=\(daemonGID) tmpfs \(path)")
        mounts.append(path)
        return path
    }

    /// A test CA and a certificate for `names` signed by it, in the lab's `tls` directory (returned): `ca.pem`,
    /// `server.pem`, `server.key`.
    func makeCertificates(for names: [String]) throws -> String {
        let tls = lab.directory + "/tls"
        try FileManager.default.createDirectory(atPath: tls, withIntermediateDirectories: true)
        try lab.run("""
            cd \(tls) && \
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 2 \
              -subj '/CN=reachd test CA' -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign && \
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr -subj '/CN=\(names[0])' && \
            printf 'subjectAltName=\(names.map { "DNS:" + $0 }.joined(separator: ","))\\nextendedKeyUsage=serverAuth\\n' > ext && \
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext
            """)
        return tls
    }

    // MARK: Servers in the peer namespace

    /// Starts reachd-testserver (fault injection by query parameters) on a free port; `url(_:)` points at it.
    func startTestServer() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", lab.peer, NetLab.binary("reachd-testserver"), "--root", www, "--port", "0", "--log", serverLog]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        servers.append(process)
        let line = try LineReader(pipe.fileHandleForReading).next(timeout: 30)
        guard line.hasPrefix("listening "), let value = Int(line.dropFirst(10)) else { throw LabError("test server said: \(line)") }
        port = value
    }

    /// Starts nginx (Debian's) serving www on `port`, at `limitRate` bytes/s per connection (0: unlimited).
    func startNginx(port: Int, limitRate: Int = 0) throws {
        try startNginx(servers: "server { listen \(Self.serverAddress):\(port); root \(www); limit_rate \(limitRate); }", probePort: port)
    }

    /// Starts nginx with these `server { … }` blocks; waits until `probePort` accepts connections.
    func startNginx(servers blocks: String, probePort port: Int) throws {
        let conf = lab.directory + "/nginx.conf"
        try """
            daemon off;
            master_process off;
            user root;
            pid \(lab.directory)/nginx.pid;
            error_log \(lab.directory)/nginx-error.log;
            events { worker_connections 64; }
            http {
              access_log \(lab.directory)/nginx-access.log;
              client_body_temp_path \(lab.directory)/nginx-tmp;
              proxy_temp_path \(lab.directory)/nginx-tmp;
              fastcgi_temp_path \(lab.directory)/nginx-tmp;
              uwsgi_temp_path \(lab.directory)/nginx-tmp;
              scgi_temp_path \(lab.directory)/nginx-tmp;
              \(blocks)
            }
            """.write(toFile: conf, atomically: true, encoding: .utf8)
        try startPeerServer(["/usr/sbin/nginx", "-c", conf], address: Self.serverAddress, port: port) {
            (try? String(contentsOfFile: self.lab.directory + "/nginx-error.log", encoding: .utf8)) ?? ""
        }
    }

    /// Starts `command` in the peer namespace (nginx, a proxy); waits until `address`:`port` accepts connections. `detail`
    /// explains a failure (a server's error log).
    func startPeerServer(_ command: [String], address: String, port: Int, detail: () -> String = { "" }) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", lab.peer] + command
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        servers.append(process)
        let deadline = Date().addingTimeInterval(30)
        while (try? lab.run("ip netns exec \(lab.peer) bash -c 'exec 3<>/dev/tcp/\(address)/\(port)'")) == nil {
            guard process.isRunning else { throw LabError("\(command[0]) exited (\(process.terminationStatus)): \(detail())") }
            guard Date() < deadline else { throw LabError("\(command[0]) did not listen on \(address):\(port): \(detail())") }
            usleep(50_000)
        }
    }

    var nginxAccessLog: String { (try? String(contentsOfFile: lab.directory + "/nginx-access.log", encoding: .utf8)) ?? "" }

    func url(_ path: String) -> String { "http://mirror.test:\(port)/\(path)" }

    /// A minute of the day as a window names it: `07:05`.
    static func clock(_ minute: Int) -> String {
        (minute / 60 < 10 ? "0" : "") + "\(minute / 60):" + (minute % 60 < 10 ? "0" : "") + "\(minute % 60)"
    }

    /// The minute of the day it is in `zone` (a name under /usr/share/zoneinfo), `ahead` seconds from now.
    static func minuteOfDay(in zone: String, ahead: Int = 0) -> Int {
        (Int(Date().timeIntervalSince1970) + ahead + TimeZone(identifier: zone)!.secondsFromGMT()) / 60 % 1440
    }

    /// The test server's request log, one dictionary per request.
    func requests(path: String? = nil) -> [[String: Any]] {
        let text = (try? String(contentsOfFile: serverLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { path == nil || ($0["path"] as? String) == "/" + path! }
    }

    /// The GETs of `path` the test server logged. A request is logged when its response ends, which can be a
    /// moment after the client has the last byte: waits up to 30 s for `atLeast` of them (and returns what is
    /// there then, for the assertion to show).
    func gets(_ path: String, atLeast count: Int = 0) -> [[String: Any]] {
        waited(for: { requests(path: path).filter { $0["method"] as? String == "GET" } }, until: { $0.count >= count })
    }

    // MARK: The transfer service

    /// A real local user (user database entry, home directory `lab/NAME-home` of theirs), removed at tear-down.
    struct User {
        var name: String
        var uid: UInt32
        var gid: UInt32
        var home: String
    }

    func makeUser(_ tag: String) throws -> User {
        let name = "rdt\(UUID().uuidString.prefix(8).lowercased())\(tag)"
        let home = lab.directory + "/\(tag)-home"
        try lab.run("useradd -M -d \(home) -s /usr/sbin/nologin -U \(name)")
        users.append(name)
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try lab.run("chown \(name):\(name) \(home) && chmod 755 \(home)")
        let ids = try lab.run("id -u \(name); id -g \(name)").split(separator: "\n").map { UInt32($0) }
        guard ids.count == 2, let uid = ids[0], let gid = ids[1] else { throw LabError("no ids for \(name)") }
        return User(name: name, uid: uid, gid: gid, home: home)
    }

    /// The command prefix that runs a program as `user` (a name) with its own groups, or with exactly `groups`.
    static func asUser(_ user: String, groups: [UInt32]? = nil) -> [String] {
        ["/usr/bin/setpriv", "--reuid=\(user)", user == "nobody" ? "--regid=nogroup" : "--regid=\(user)",
         groups.map { "--groups=" + $0.map(String.init).joined(separator: ",") } ?? "--init-groups"]
    }

    /// Starts reachd-transfers in the host namespace (without D-Bus unless `arguments` name a bus; with a netlink
    /// watcher of its own unless they name `--verdicts`, never the machine's reachd) and waits until it answers: the system instance as `daemonUID`, or `user`'s own instance (HOME their home). `wrapper`: a command
    /// that execs the rest (socket activation); it runs as root, the daemon never does.
    func startDaemon(config: String? = nil, arguments: [String] = [], environment: [String: String] = [:], wrapper: [String] = [],
                     user: User? = nil) throws {
        let owner = user ?? daemonUser
        try lab.run("chown -R \(owner.uid):\(owner.gid) \(stateDirectory) \(cacheDirectory) \(lab.directory)/run")
        let identity = Self.asUser(owner.name)
        var args = ["netns", "exec", lab.host] + wrapper + identity + [NetLab.binary("reachd-transfers")] + (user == nil ? ["--system"] : [])
            + ["--socket", socketPath, "--state-dir", stateDirectory, "--cache-dir", cacheDirectory,
               "--sysfs-root", lab.sysfsRoot, "--log-level", "debug"] + (arguments.contains("--bus") ? [] : ["--bus", "none"])
            + (arguments.contains("--networkmanager") ? [] : ["--networkmanager", "none"])
            + (arguments.contains("--power") ? [] : ["--power", "none"])
            + (arguments.contains("--proxy-resolver") ? [] : ["--proxy-resolver", "none"])
            + (arguments.contains("--verdicts") ? [] : ["--verdicts", "netlink"]) + arguments
        if let config {
            let path = lab.directory + "/transfers.toml"
            try config.write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o644)
            args += ["--config", path]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = args
        var variables = ProcessInfo.processInfo.environment
        for name in ProxySettings.environmentNames { variables[name] = nil }
        variables.merge(environment) { _, new in new }
        variables["HOME"] = owner.home
        // The zone is the lab's `/etc/localtime` (`zoneFile`), never a TZ of the test's own.
        for name in ["XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CACHE_HOME", "TZ"] { variables[name] = nil }
        process.environment = variables
        if !FileManager.default.fileExists(atPath: daemonLog) { _ = FileManager.default.createFile(atPath: daemonLog, contents: nil) }
        let logFile = FileHandle(forWritingAtPath: daemonLog)
        logFile?.seekToEndOfFile()
        process.standardError = logFile
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        daemon = process
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if Self.answers(socketPath) { return }
            guard process.isRunning else { throw LabError("reachd-transfers exited (\(process.terminationStatus)): \(self.log)") }
            usleep(20_000)
        }
        throw LabError("reachd-transfers did not answer: \(log)")
    }

    /// Whether a daemon answers at `path`: a pong, or (a user's own instance, which serves only that user) root
    /// told it is not allowed.
    static func answers(_ path: String) -> Bool {
        guard let client = try? TransferClient(path: path) else { return false }
        do {
            guard case .pong = try client.call(TransferRequest(op: .ping), timeout: 5) else { return false }
            return true
        } catch {
            guard case .refused(let refusal) = error.failure else { return false }
            return refusal.code == .permissionDenied
        }
    }

    /// Stops the daemon with `signal` (SIGKILL: no chance to write anything) and waits for it.
    func stopDaemon(signal: Int32 = SIGTERM) {
        guard let daemon, daemon.isRunning else { return }
        kill(daemon.processIdentifier, signal)
        daemon.waitUntilExit()
    }

    var log: String { (try? String(contentsOfFile: daemonLog, encoding: .utf8)) ?? "" }

    /// The running daemon's pid (`ip netns exec` and setpriv exec it, so it is the process the lab started).
    var daemonPID: Int32? { daemon.flatMap { $0.isRunning ? $0.processIdentifier : nil } }

    /// Waits until reachd-transfers has taken in a network change: its latest logged internet verdict is `status`.
    func waitForLoggedVerdict(_ status: String, timeout: Double = 30, file: StaticString = #filePath, line: UInt = #line) throws {
        try eventually("reachd-transfers to judge the network \(status)", timeout: timeout, file: file, line: line,
                       detail: "log: \(self.log.suffix(2000))") { NetLab.lastLoggedVerdict(in: self.log) == status }
    }

    func client() throws -> TransferClient { try TransferClient(path: socketPath) }

    /// `reachctl download ARGS` against the lab's service, optionally as another user (with their own groups, or `groups`).
    func download(_ arguments: [String], user: String? = nil, groups: [UInt32]? = nil,
                  environment: [String: String] = [:]) throws -> (status: Int32, out: String, err: String) {
        try reachctl(["download"] + arguments, user: user, groups: groups, environment: environment)
    }

    /// `reachctl ARGS` against the lab's service, optionally as another user, with the test's environment without its proxy
    /// variables, and `environment`: exit status, stdout, stderr.
    func reachctl(_ arguments: [String], user: String?, groups: [UInt32]? = nil,
                  environment: [String: String] = [:]) throws -> (status: Int32, out: String, err: String) {
        let command = (user.map { Self.asUser($0, groups: groups) } ?? []) + [NetLab.binary("reachctl")] + arguments
            + ["--transfers-socket", socketPath]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        var variables = ProcessInfo.processInfo.environment
        for name in ProxySettings.environmentNames { variables[name] = nil }
        process.environment = variables.merging(environment) { _, new in new }
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let o = stdout.fileHandleForReading.readDataToEndOfFile(), e = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    /// `reachctl fetch URL` through the offline cache: exit status, the body's SHA-256 (of stdout), stderr.
    func fetch(_ url: String, user: String? = nil, groups: [UInt32]? = nil) throws -> (status: Int32, sum: String, err: String) {
        let reachctl = "env -u http_proxy -u https_proxy -u HTTPS_PROXY -u all_proxy -u ALL_PROXY -u no_proxy -u NO_PROXY "
            + "\(NetLab.binary("reachctl")) fetch '\(url)' --transfers-socket \(socketPath)"
        let command = (user.map { Self.asUser($0, groups: groups).joined(separator: " ") + " " } ?? "") + reachctl
        let out = lab.directory + "/fetch.out", err = lab.directory + "/fetch.err"
        let status = try lab.run("\(command) > \(out) 2> \(err); echo $?").trimmingCharacters(in: .whitespacesAndNewlines)
        return (Int32(status) ?? -1, try sha256(out), (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    /// Adds an upload with `reachctl upload add`, optionally as another user; returns its id.
    func upload(_ file: String, to url: String, _ extra: [String] = [], user: String? = nil) throws -> String {
        let result = try reachctl(["upload", "add", file, "--to", url] + extra, user: user)
        guard result.status == 0 else { throw LabError("upload add failed (\(result.status)): \(result.err)") }
        return result.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Adds a job with reachctl; returns its id.
    func add(_ url: String, output: String, _ extra: [String] = []) throws -> String {
        let result = try download(["add", url, "--output", output] + extra)
        guard result.status == 0 else { throw LabError("download add failed (\(result.status)): \(result.err)") }
        return result.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Follows job `id` until `condition` holds; fails the test after `timeout` seconds.
    @discardableResult
    func waitFor(_ id: String, _ what: String, timeout: Double = 30, file: StaticString = #filePath, line: UInt = #line,
                 _ condition: (Job) -> Bool) throws -> Job {
        let client = try client()
        guard var job = try client.jobs(TransferRequest(op: .watch, job: id)).first else { throw LabError("no job \(id)") }
        let deadline = Date().addingTimeInterval(timeout)
        while !condition(job) {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let next = try client.nextEvent(timeout: left) else {
                XCTFail("timed out waiting for job \(id) to be \(what); last: \(job.state.rawValue) \(job.bytesMoved)/\(job.bytesTotal.map(String.init) ?? "?") \(job.reason ?? "")", file: file, line: line)
                throw LabError("timed out waiting for \(what)")
            }
            job = next
        }
        return job
    }
}
