import CReachdBus
import CSystemd
import Logging
import ReachdModel
import ReachdProtocol
import ReachdServiceKit
import ReachdSystem
import ReachdTransferModel
import ReachdTransferProtocol
#if canImport(Glibc)
import Glibc
#endif

/// `org.reachd.Transfers1` at `/org/reachd/Transfers1` (dbus/org.reachd.Transfers1.xml): the download
/// queue over D-Bus. Each call acts as its caller (uid from the bus), with the socket's rules; every job
/// change is announced with `JobChanged(id, uid, state, bytes_received, bytes_total)` (no URL or path:
/// signals reach every listener).
final class TransferBusService: @unchecked Sendable {
    static let name = "org.reachd.Transfers1"
    static let path = "/org/reachd/Transfers1"
    static let interface = "org.reachd.Transfers1"

    private let connection: BusConnection
    private let scheduler: TransferScheduler
    private let access: InstanceAccess
    private let logger: Logger
    private var watcher: Int?

    init(bus: Bus, scheduler: TransferScheduler, access: InstanceAccess, logger: Logger) throws {
        connection = try BusConnection(bus)
        self.scheduler = scheduler
        self.access = access
        self.logger = logger
        var callbacks = reachd_transfers_bus_callbacks(method: transfersBusMethod)
        let context = Unmanaged.passUnretained(self).toOpaque()
        do {
            try connection.export({ bus, slot in
                reachd_transfers_bus_add_object(bus, Self.path, Self.interface, &callbacks, context, &slot)
            }, what: "sd_bus_add_object_vtable")
            try connection.requestName(Self.name)
        } catch {
            connection.stop()
            throw error
        }
    }

    /// Serves and announces job changes until `stop`.
    func start() async throws {
        try connection.start()
        let connection = self.connection, logger = self.logger
        watcher = try? await scheduler.addWatcher(owner: Owner(uid: 0, gid: 0), job: nil) { job in
            connection.perform { bus in Self.emitJobChanged(job, on: bus, logger: logger) }
        }.0
    }

    func stop() async {
        if let watcher { await scheduler.removeWatcher(watcher) }
        connection.stop()
    }

    // MARK: - Bus thread

    fileprivate func handle(_ call: OpaquePointer) -> Int32 {
        guard let owner = Self.caller(of: call) else {
            return BusMessage.replyError(call, name: "org.freedesktop.DBus.Error.AccessDenied", message: "the bus did not say who is calling")
        }
        guard access.admits(owner) else {
            return BusMessage.replyError(call, name: "org.freedesktop.DBus.Error.AccessDenied", message: access.refusal(for: owner))
        }
        let request: TransferRequest
        switch Self.request(from: call) {
        case .success(let parsed): request = parsed
        case .failure(let error):
            return BusMessage.replyError(call, name: "org.freedesktop.DBus.Error.InvalidArgs", message: error.message)
        }
        let message = BusMessage.Retained(call)
        let connection = self.connection, logger = self.logger, scheduler = self.scheduler
        Task {
            let outcome: Result<TransferReply, ProtocolError>
            do throws(ProtocolError) {
                outcome = .success(try await scheduler.answer(request, owner: owner))
            } catch {
                outcome = .failure(error)
            }
            connection.perform { bus in
                defer { message.release() }
                switch outcome {
                case .success(.job(_, let job)): BusMessage.reply(message.pointer, with: Self.dictionary(of: job), on: bus, logger: logger)
                case .success(.jobs(_, let jobs, _)): BusMessage.reply(message.pointer, with: jobs.map(Self.dictionary), on: bus, logger: logger)
                case .success: break
                case .failure(let error): _ = BusMessage.replyError(message.pointer, name: Self.errorName(error.code), message: error.message)
                }
            }
        }
        return 1
    }

    /// The request a call makes, its arguments checked as the socket checks them.
    private static func request(from call: OpaquePointer) -> Result<TransferRequest, ProtocolError> {
        let member = sd_bus_message_get_member(call).map { String(cString: $0) } ?? ""
        func invalid(_ message: String) -> Result<TransferRequest, ProtocolError> { .failure(ProtocolError(.badRequest, message)) }
        switch member {
        case "List": return .success(TransferRequest(op: .list))
        case "Show", "Pause", "Resume", "Cancel", "Refresh":
            guard let text = readString(call), let id = TransferRequestParser.jobID(text) else { return invalid("expected a job id (hex digits)") }
            let op = TransferRequest.Operation(rawValue: member.lowercased()) ?? .show
            return .success(TransferRequest(op: op, job: id))
        case "Limit":
            guard let text = readString(call), let id = TransferRequestParser.jobID(text), let rate = readString(call) else {
                return invalid("expected a job id (hex digits) and a rate")
            }
            guard rate == "none" || ByteRate.bytesPerSecond(rate) != nil else { return invalid("rate must be bytes per second like 500k or 2M, or none") }
            var request = TransferRequest(op: .limit, job: id)
            request.maxRate = ByteRate.bytesPerSecond(rate)
            return .success(request)
        case "Add":
            guard let url = readString(call), let output = readString(call) else { return invalid("expected url, output and options") }
            var spec = DownloadSpec(url: url, output: output)
            guard let options = readOptions(call) else {
                return invalid("options must be a{sv} of AllowMetered (b), Priority (s), Sha256 (s), RefreshEvery (s)")
            }
            for (key, value) in options {
                switch (key, value) {
                case ("AllowMetered", .bool(let allow)): spec.allowMetered = allow
                case ("AllowInsecureAuth", .bool(let allow)): spec.allowInsecureAuth = allow
                case ("Priority", .string(let name)):
                    guard let priority = Priority(rawValue: name) else { return invalid("Priority must be low, normal or high") }
                    spec.priority = priority
                case ("Sha256", .string(let hex)):
                    guard let sum = TransferRequestParser.sha256(hex) else { return invalid("Sha256 must be 64 hex digits") }
                    spec.sha256 = sum
                case ("MaxRate", .string(let text)):
                    guard let rate = ByteRate.bytesPerSecond(text) else { return invalid("MaxRate must be bytes per second like 500k or 2M") }
                    spec.maxRate = rate
                case ("Proxy", .string(let text)):
                    do { try JobProxy.validate(text) } catch { return invalid("Proxy: \(error)") }
                    spec.proxy = text
                case ("RefreshEvery", .string(let text)):
                    guard let seconds = RefreshInterval.seconds(text) else { return invalid("RefreshEvery must be a duration like 90s, 15m, 6h or 2d") }
                    spec.refreshSeconds = seconds
                case (let name, _) where constraintKeys[name] != nil:
                    let text: String
                    switch value {
                    case .string(let string): text = string
                    case .bool(let flag): text = flag ? "true" : "false"
                    default: return invalid("\(name) has the wrong type")
                    }
                    if let refusal = spec.constraints.set(constraintKeys[name]!, to: text) { return invalid("\(name): \(refusal)") }
                default:
                    return invalid("unknown option \(key) (known: AllowMetered b, AllowInsecureAuth b, Priority s, Sha256 s, RefreshEvery s, Proxy s, MaxRate s, "
                        + "Network s, Power s, NotBefore s, Window s, Deadline s, AfterDeadline s, StorageNotLow b, Now b)")
                }
            }
            return .success(TransferRequest(op: .add, download: spec))
        default: return invalid("unknown method \(member)")
        }
    }

    /// Add's options for the job's constraints, and the keys `JobConstraints.set` knows them by.
    private static let constraintKeys = [
        "Network": "network", "Power": "power", "NotBefore": "notBefore", "Window": "window", "Deadline": "deadline",
        "AfterDeadline": "afterDeadline", "StorageNotLow": "storageNotLow", "Now": "now",
    ]

    private static func readString(_ call: OpaquePointer) -> String? {
        var pointer: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(call, CChar(UInt8(ascii: "s")), &pointer) > 0, let pointer else { return nil }
        return String(cString: pointer)
    }

    /// Reads `a{sv}` whose values are booleans or strings.
    private static func readOptions(_ call: OpaquePointer) -> [(String, BusMessage.Value)]? {
        guard sd_bus_message_enter_container(call, CChar(UInt8(ascii: "a")), "{sv}") > 0 else { return nil }
        var options: [(String, BusMessage.Value)] = []
        while sd_bus_message_enter_container(call, CChar(UInt8(ascii: "e")), "sv") > 0 {
            guard let key = readString(call) else { return nil }
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            guard sd_bus_message_peek_type(call, &type, &contents) > 0, let contents else { return nil }
            let signature = String(cString: contents)
            guard signature == "b" || signature == "s", sd_bus_message_enter_container(call, CChar(UInt8(ascii: "v")), signature) > 0 else {
                return nil
            }
            if signature == "b" {
                var flag: Int32 = 0
                guard sd_bus_message_read_basic(call, CChar(UInt8(ascii: "b")), &flag) > 0 else { return nil }
                options.append((key, .bool(flag != 0)))
            } else {
                guard let text = readString(call) else { return nil }
                options.append((key, .string(text)))
            }
            guard sd_bus_message_exit_container(call) >= 0, sd_bus_message_exit_container(call) >= 0 else { return nil }
        }
        return sd_bus_message_exit_container(call) >= 0 ? options : nil
    }

    /// The caller's uid, gid and supplementary groups as the bus daemon took them from the kernel when the
    /// caller connected (SO_PEERCRED, SO_PEERGROUPS), never augmented from /proc (a pid read there may belong to
    /// another process by then). The groups come from the bus daemon's GetConnectionCredentials, which
    /// dbus-daemon fills from SO_PEERGROUPS and sd-bus (252) does not ask for; a bus that records none gives
    /// none, and then only the caller's uid and primary group count.
    private static func caller(of call: OpaquePointer) -> Owner? {
        guard let ids = BusMessage.senderIDs(of: call) else { return nil }
        var groups = [gid_t](repeating: 0, count: 1024)
        var count = 0
        if reachd_bus_sender_groups(call, &groups, groups.count, &count) < 0 { count = 0 }
        // No group on record is no group: the uid's own number never stands in for it.
        return Owner(uid: ids.uid, gid: ids.gid ?? gid_t.max, groups: Array(groups.prefix(count)))
    }

    private static func errorName(_ code: ProtocolError.Code) -> String {
        switch code {
        case .badJSON, .badRequest, .unknownOp, .lineTooLong: "org.freedesktop.DBus.Error.InvalidArgs"
        case .notFound: "org.reachd.Transfers1.Error.NotFound"
        case .permissionDenied: "org.reachd.Transfers1.Error.PermissionDenied"
        case .invalidURL: "org.reachd.Transfers1.Error.InvalidURL"
        case .invalidOutput: "org.reachd.Transfers1.Error.InvalidOutput"
        case .conflict: "org.reachd.Transfers1.Error.Conflict"
        case .limit, .tooManyConnections, .tooManyRequests: "org.reachd.Transfers1.Error.Limit"
        case .internalError: "org.reachd.Transfers1.Error.Internal"
        case .unavailable: "org.reachd.Transfers1.Error.Unavailable"
        }
    }

    /// The job as `a{sv}` (docs/transfers.md; "" and -1 where the socket has null).
    static func dictionary(of job: Job) -> BusMessage.Dictionary {
        [
            ("Id", .string(job.id)), ("Url", .string(job.url)), ("Output", .string(job.file)),
            ("State", .string(job.state.rawValue)), ("Priority", .string(job.priority.rawValue)),
            ("AllowMetered", .bool(job.allowMetered)), ("Sha256", .string(job.download?.sha256 ?? "")), ("Uid", .uint32(job.owner.uid)),
            ("BytesReceived", .int64(job.bytesMoved)), ("BytesTotal", .int64(job.bytesTotal ?? -1)),
            ("Reason", .string(job.reason ?? "")), ("RefreshEvery", .int64(job.download?.refreshSeconds ?? 0)),
            ("LastChecked", .string(job.download?.lastChecked?.description ?? "")),
            ("NextCheck", .string(job.download?.nextCheck?.description ?? "")),
            ("Constraints", .string(job.constraints.summary)), ("MaxRate", .int64(job.maxRate ?? 0)),
        ]
    }

    private static func emitJobChanged(_ job: Job, on bus: OpaquePointer, logger: Logger) {
        var signal: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &signal, path, interface, "JobChanged") >= 0, let signal else { return }
        defer { sd_bus_message_unref(signal) }
        var rc = BusMessage.append(.string(job.id), to: signal)
        if rc >= 0 { rc = BusMessage.append(.uint32(job.owner.uid), to: signal) }
        if rc >= 0 { rc = BusMessage.append(.string(job.state.rawValue), to: signal) }
        if rc >= 0 { rc = BusMessage.append(.uint64(UInt64(job.bytesMoved)), to: signal) }
        if rc >= 0 { rc = BusMessage.append(.int64(job.bytesTotal ?? -1), to: signal) }
        if rc >= 0 { rc = sd_bus_send(bus, signal, nil) }
        if rc < 0 { logger.warning("D-Bus: cannot emit JobChanged: \(String(cString: strerror(-rc)))") }
    }
}

private let transfersBusMethod: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?) -> Int32 = { context, call in
    guard let context, let call else { return -EINVAL }
    return Unmanaged<TransferBusService>.fromOpaque(context).takeUnretainedValue().handle(call)
}
