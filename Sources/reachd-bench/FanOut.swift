import ReachdModel
#if canImport(Glibc)
import Glibc
#endif

/// The subscribers of the fan-out figure, read by bench/fanout-floor.c's reader (`fanout-floor read`) in a
/// process of its own, as the floor's connections are: the two figures differ only in the writer.
final class SubscriberReader {
    private let pid: pid_t
    private let output: Int32
    private var pending: [UInt8] = []

    /// Starts the reader on `fds` (inherited) for `rounds` changes and waits until it is ready.
    init(program: String, fds: [Int32], rounds: Int) throws {
        let started = try spawn(program, ["read", "\(rounds)"] + fds.map { "\($0)" })
        pid = started.pid
        output = started.output
        guard try nextLine() == "ready" else { throw BenchError("\(program) read did not start") }
    }

    deinit {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        close(output)
    }

    /// The monotonic time at which every subscriber had received one more line, and the reader's work for it.
    func awaitLine() throws -> (end: Double, reader: ReaderWork) {
        guard let line = try nextLine(), let round = ReaderWork.round(line) else { throw BenchError("the subscribers' reader failed") }
        return (round.figure, round.reader)
    }

    private func nextLine() throws -> String? {
        var chunk = [UInt8](repeating: 0, count: 256)
        while !pending.contains(10) {
            var entry = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 60_000) > 0 else { throw BenchError("the subscribers' reader said nothing for 60 s") }
            let n = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            guard n > 0 else { return nil }
            pending += chunk.prefix(n)
        }
        let end = pending.firstIndex(of: 10)!
        defer { pending.removeFirst(end + 1) }
        return String(decoding: pending[..<end], as: UTF8.self)
    }
}

/// Starts `program` with `arguments`, its standard output a pipe: its pid and the pipe's reading end.
func spawn(_ program: String, _ arguments: [String]) throws -> (pid: pid_t, output: Int32) {
    var pipeEnds: [Int32] = [0, 0]
    guard pipe(&pipeEnds) == 0 else { throw BenchError("pipe") }
    for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
    defer { posix_spawn_file_actions_destroy(&actions) }
    let args = [program] + arguments
    var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
    defer { for arg in argv { free(arg) } }
    var child: pid_t = 0
    let spawned = posix_spawn(&child, program, &actions, nil, &argv, environ)
    close(pipeEnds[1])
    guard spawned == 0 else { close(pipeEnds[0]); throw BenchError("cannot run \(program)") }
    return (child, pipeEnds[0])
}

/// What the reader (bench/fanout-floor.c) spent on one round: its CPU time, and its waits in `epoll_wait`.
struct ReaderWork {
    let cpuSeconds: Double
    let waits: Int

    /// A round's line of bench/fanout-floor.c, "FIGURE CPU-MILLISECONDS WAITS": its figure, and the reader's work.
    static func round(_ line: some StringProtocol) -> (figure: Double, reader: ReaderWork)? {
        let fields = line.split(separator: " ")
        guard fields.count == 3, let figure = Double(fields[0]), let cpu = Double(fields[1]), let waits = Int(fields[2]) else { return nil }
        return (figure, ReaderWork(cpuSeconds: cpu / 1000, waits: waits))
    }
}

/// One round of bench/fanout-floor.c's floor on `connections` connections: its time in seconds, and the reader's work.
/// `watched`: the writer's connections are in an epoll set, as a server's are.
func fanOutFloor(_ program: String, connections: Int, watched: Bool = false) throws -> (seconds: Double, reader: ReaderWork) {
    let (child, output) = try spawn(program, ["floor", "\(connections)", "1"] + (watched ? ["watched"] : []))
    defer { close(output) }
    var text: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 256)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        text += chunk.prefix(n)
    }
    var status: Int32 = 0
    waitpid(child, &status, 0)
    let line = String(decoding: text, as: UTF8.self).split(separator: "\n").first ?? ""
    guard status == 0, let round = ReaderWork.round(line) else { throw BenchError("\(program) floor failed (status \(status))") }
    return (round.figure / 1000, round.reader)
}
