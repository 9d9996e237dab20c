import ReachdClient
import ReachdModel
import ReachdProtocol
#if canImport(Glibc)
import Glibc
#endif

extension Bench {
    /// Re-judging many watched hosts after one route change, and `reachctl status --host` wall time.
    func benchHosts(_ socketPath: String) throws {
        let names = (1...hosts).map { "h\($0).bench" }
        let client = try ReachdConnection(path: socketPath)
        let start = MonotonicClock.seconds()
        let initial = try client.verdicts(for: Request(op: .subscribe, hosts: names), timeout: 120)
        let subscribeTime = MonotonicClock.seconds() - start
        guard initial.count == hosts, initial.allSatisfy({ $0.verdict.status == .wired }) else {
            throw BenchError("expected \(hosts) hosts via eth0, got \(initial.filter { $0.verdict.status == .wired }.count)")
        }
        var rounds: [Double] = []
        for round in 0..<4 {
            let via = round % 2 == 0 ? "203.0.113.1" : "192.0.2.1"
            let change = MonotonicClock.seconds()
            try runProgram("/usr/sbin/ip", ["route", "replace", "198.18.0.0/15", "via", via])
            // Count event lines without decoding them: the figure is the daemon's, not this client's JSON parsing.
            var changed = 0
            let marker = Array("\"type\":\"event\"".utf8)
            while changed < hosts {
                guard let line = try client.nextLine(timeout: 30) else { throw BenchError("host events missing") }
                if line.firstRange(of: marker) != nil { changed += 1 }
            }
            rounds.append(MonotonicClock.seconds() - change)
        }
        rounds.sort()
        if let metrics {
            var scrapes: [Double] = []
            var size = 0
            for _ in 0..<50 {
                let begin = MonotonicClock.seconds()
                size = try scrape(metrics)
                scrapes.append(MonotonicClock.seconds() - begin)
            }
            scrapes.sort()
            print("metrics: GET /metrics with \(hosts) hosts watched (50 scrapes, \(size) bytes): median \(ms(percentile(scrapes, 0.5))) ms, max \(ms(scrapes.last ?? 0)) ms")
        }
        print("hosts: subscribe to \(hosts) names \(ms(subscribeTime)) ms; one route change re-judges all \(hosts) (event at the client): median \(ms(percentile(rounds, 0.5))) ms, max \(ms(rounds.last ?? 0)) ms")
        try runProgram("/usr/sbin/ip", ["route", "del", "198.18.0.0/15"])
        if let reachctl {
            var times: [Double] = []
            for i in 0..<20 {
                let begin = MonotonicClock.seconds()
                try runProgram(reachctl, ["status", "--host", names[i % names.count], "--socket", socketPath], okStatuses: [0, 1])
                times.append(MonotonicClock.seconds() - begin)
            }
            times.sort()
            print("reachctl status --host (/etc/hosts name, 20 runs): median \(ms(percentile(times, 0.5))) ms, max \(ms(times.last ?? 0)) ms")
        }
    }

    /// One `GET /metrics` from `address` (IPv4:port); returns the bytes of the answer.
    private func scrape(_ address: String) throws -> Int { try scraped(address).count }

    /// The answer to one `GET /metrics` from `address` (IPv4:port), headers and all.
    func scraped(_ address: String) throws -> [UInt8] {
        let parts = address.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { throw BenchError("--metrics takes IPv4:PORT") }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket failed") }
        defer { close(fd) }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        inet_pton(AF_INET, String(parts[0]), &sin.sin_addr)
        let connected = withUnsafePointer(to: &sin) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { throw BenchError("cannot connect to \(address)") }
        let request = Array("GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            answer += buffer.prefix(n)
        }
        guard !answer.isEmpty else { throw BenchError("empty answer from \(address)") }
        return answer
    }
}
