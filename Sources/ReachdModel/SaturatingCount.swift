extension UInt64 {
    /// `self + other`, or `.max` where the sum would not fit: byte counts that stop at the top rather than wrap or trap.
    public func addingSaturated(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
