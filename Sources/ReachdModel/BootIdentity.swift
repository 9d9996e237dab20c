/// Which boot of the machine this is, as the budgets tell a reboot (a counter that starts again) from a counter
/// that went on: the kernel's boot ID, from `/proc/sys/kernel/random/boot_id` (a UUID with dashes) or, where the
/// sandbox hides that file (`ProcSubset=pid`), from systemd's `%b` in the unit's `REACHD_BOOT_ID` (the same ID,
/// without dashes). Both read as the kernel's form (lowercase, dashes 8-4-4-4-12), so that the source can change
/// between runs and ledgers saved before read the same. Pure.
public enum BootIdentity {
    /// The environment variable the installed unit sets to systemd's `%b`.
    public static let environmentVariable = "REACHD_BOOT_ID"

    /// The boot ID from the kernel's file's text, else from the environment's value; nil when neither is a boot ID.
    public static func current(kernelFile: String?, environment: String?) -> String? {
        normalized(kernelFile) ?? normalized(environment)
    }

    /// `text` (its first line) in the kernel's form, or nil when it is not a 128-bit ID.
    static func normalized(_ text: String?) -> String? {
        guard let line = text?.split(separator: "\n", omittingEmptySubsequences: false).first else { return nil }
        let digits = Array(line.filter { $0 != "-" }.lowercased())
        guard digits.count == 32, digits.allSatisfy(\.isHexDigit), digits.contains(where: { $0 != "0" }) else { return nil }
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(digits[$0]) }.joined(separator: "-")
    }
}
