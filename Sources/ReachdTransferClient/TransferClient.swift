import ReachdClient
import ReachdProtocol
import ReachdTransferModel
import ReachdTransferProtocol
#if canImport(Glibc)
import Glibc
#endif

/// A blocking client of the transfer service's socket (`reachd-transfers`, docs/transfers.md).
public final class TransferClient {
    private let connection: ReachdConnection
    private var heldEvents: [Job] = []
    private var nextID: Int64 = 0

    /// Connects to the socket at `path`, where `daemon` (an instance of reachd-transfers) listens.
    public init(path: String, daemon: ServingDaemon = .transfers(system: false)) throws(ClientError) {
        connection = try ReachdConnection(path: path, daemon: daemon)
    }

    /// The instance at the other end, as errors name it.
    public var daemon: ServingDaemon { connection.daemon }

    /// The socket, e.g. to `shutdown(2)` it from another thread and end a blocking read.
    public var fileDescriptor: Int32 { connection.fileDescriptor }

    /// Sends `request` and returns its answer (`job`, `jobs` or `pong`); a refusal throws `.refused`.
    /// Events that arrive first are kept for `nextEvent`.
    public func call(_ request: TransferRequest, timeout: Double? = 30) throws(ClientError) -> TransferReply {
        var request = request
        nextID += 1
        request.id = .number(nextID)
        try connection.send(raw: request.encodedLine())
        while true {
            guard let line = try connection.nextLine(timeout: timeout) else { throw connection.failure(.io(call: "read", errno: ETIMEDOUT)) }
            let reply: TransferReply
            do {
                reply = try TransferReply.decode(line: line)
            } catch {
                throw connection.failure(.malformedReply(String(decoding: line.prefix(200), as: UTF8.self)))
            }
            switch reply {
            case .event(let job): heldEvents.append(job)
            case .error(let error) where error.id == request.id || error.id == nil: throw connection.failure(.refused(error))
            case .job(let id, _) where id == request.id, .jobs(let id, _, _) where id == request.id, .pong(let id) where id == request.id,
                 .fetched(let id, _) where id == request.id:
                return reply
            default: continue
            }
        }
    }

    /// The job in a `job` answer.
    public func job(_ request: TransferRequest, timeout: Double? = 30) throws(ClientError) -> Job {
        guard case .job(_, let job) = try call(request, timeout: timeout) else { throw connection.failure(.malformedReply("expected a job")) }
        return job
    }

    /// The jobs in a `jobs` answer (`list`, `watch`).
    public func jobs(_ request: TransferRequest, timeout: Double? = 30) throws(ClientError) -> [Job] {
        try jobsAndNotice(request, timeout: timeout).jobs
    }

    /// The jobs in a `jobs` answer and what the service says of itself beside them (`TransferReply.jobs`).
    public func jobsAndNotice(_ request: TransferRequest, timeout: Double? = 30) throws(ClientError) -> (jobs: [Job], notice: String?) {
        guard case .jobs(_, let jobs, let notice) = try call(request, timeout: timeout) else {
            throw connection.failure(.malformedReply("expected jobs"))
        }
        return (jobs, notice)
    }

    /// The next job event after a `watch`; nil on timeout.
    public func nextEvent(timeout: Double?) throws(ClientError) -> Job? {
        if !heldEvents.isEmpty { return heldEvents.removeFirst() }
        while true {
            guard let line = try connection.nextLine(timeout: timeout) else { return nil }
            if case .event(let job)? = try? TransferReply.decode(line: line) { return job }
        }
    }
}
