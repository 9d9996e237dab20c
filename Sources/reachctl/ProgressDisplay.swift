import ReachdModel
import ReachdTransferModel
#if canImport(Glibc)
import Glibc
#endif

/// The live progress bar (terminal) or plain lines (a line per state change, at most one a second otherwise).
struct ProgressDisplay {
    let terminal: Bool
    private var lastState: JobState?
    private var lastLine = 0.0
    private var rateSample: (bytes: Int64, seconds: Double)?
    private var rate = 0.0
    private var drawn = false

    init(terminal: Bool) { self.terminal = terminal }

    mutating func show(_ job: Job) {
        let now = MonotonicClock.seconds()
        if let sample = rateSample, now - sample.seconds >= 0.5 {
            let instant = Double(job.bytesMoved - sample.bytes) / (now - sample.seconds)
            rate = rate == 0 ? instant : 0.7 * rate + 0.3 * instant
            rateSample = (job.bytesMoved, now)
        } else if rateSample == nil || job.state != .running {
            rateSample = (job.bytesMoved, now)
        }
        if job.state != .running { rate = 0 }
        if terminal {
            writeAll(1, "\r\u{1b}[K" + bar(job))
            drawn = true
            if job.state != lastState && job.state != .running, let reason = job.reason {
                writeAll(1, "\n" + reason.terminalSafe + "\n")
                drawn = false
            }
        } else if job.state != lastState || now - lastLine >= 1 {
            printLine(bar(job) + (job.state != .running ? job.reason.map { "  (\($0))".terminalSafe } ?? "" : ""))
            lastLine = now
        }
        lastState = job.state
    }

    mutating func finish() {
        if terminal && drawn { writeAll(1, "\n") }
    }

    /// The job's progress, terminal-safe.
    private func bar(_ job: Job) -> String {
        let width = 30
        var text = "\(job.id.terminalSafe) \(job.state.rawValue) "
        if let total = job.bytesTotal, total > 0 {
            let fraction = min(1, Double(job.bytesMoved) / Double(total))
            let filled = Int(fraction * Double(width))
            text += "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            text += "\(Int(fraction * 100))% \(byteCount(job.bytesMoved))/\(byteCount(total))"
            if rate > 0 {
                let eta = Int(Double(total - job.bytesMoved) / rate)
                text += " \(byteCount(Int64(rate)))/s ETA \(eta / 60):" + (eta % 60 < 10 ? "0" : "") + "\(eta % 60)"
            }
        } else {
            text += byteCount(job.bytesMoved)
            if rate > 0 { text += " \(byteCount(Int64(rate)))/s" }
        }
        return text
    }
}
