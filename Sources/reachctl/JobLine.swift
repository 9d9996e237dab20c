import ReachdModel
import ReachdTransferModel

/// `123.4 MiB`
func byteCount(_ bytes: Int64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes), unit = 0
    while value >= 1024 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : formatted(value, digits: 1) + " " + units[unit]
}

func formatted(_ value: Double, digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    let whole = Int64(rounded)
    guard digits > 0 else { return String(whole) }
    let fraction = Int64(((rounded - Double(whole)) * scale).rounded())
    let text = String(fraction)
    return "\(whole)." + String(repeating: "0", count: max(0, digits - text.count)) + text
}

/// `ID  STATE  RECEIVED/TOTAL  OUTPUT  (reason)  {constraints}  via proxy P`; uploads: `ID  upload STATE  SENT/TOTAL  FILE -> URL
/// [status]`; terminal-safe (paths, URLs and reasons come from other users and servers).
func humanLine(_ job: Job) -> String {
    let constraints = (job.constraints.isEmpty ? "" : "  {\(job.constraints.summary)}") + (job.viaProxy.map { "  via proxy \($0)" } ?? "")
        + (job.maxRate.map { "  max \(ByteRate.describe($0))" } ?? "")
        + (job.state == .running ? job.pace.map { "  \(ByteRate.describe($0.bytesPerSecond))\($0.yielding ? ", yielding" : "")" } ?? "" : "")
    if job.isUpload {
        let total = job.bytesTotal.map(byteCount) ?? "?"
        let status = job.upload?.answer.map { "  [\($0.status)]" } ?? ""
        let reason = job.reason.map { "  (\($0))" } ?? ""
        return "\(job.id)  upload \(job.state.rawValue)  \(byteCount(job.bytesMoved))/\(total)  \(job.file) -> \(job.url)\(status)\(reason)\(constraints)"
            .terminalSafe
    }
    let total = job.bytesTotal.map(byteCount) ?? "?"
    let percent = job.bytesTotal.flatMap { $0 > 0 ? " \(Int(Double(job.bytesMoved) * 100 / Double($0)))%" : nil } ?? ""
    let reason = job.reason.map { "  (\($0))" } ?? ""
    let refresh = job.download?.nextCheck.map { "  next check \($0)" } ?? ""
    return "\(job.id)  \(job.state.rawValue)  \(byteCount(job.bytesMoved))/\(total)\(percent)  \(job.file)\(reason)\(refresh)\(constraints)".terminalSafe
}
