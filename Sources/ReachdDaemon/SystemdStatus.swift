import ReachdModel

extension Verdict {
    /// The one-line state for `systemctl status`.
    var systemdStatus: String {
        "internet: \(summary)"
    }
}
