import CNetlink

/// A failure reported by libnl, with the call that failed.
public struct NetlinkError: Error, CustomStringConvertible, Sendable {
    /// The libnl function that failed.
    public var call: String
    /// libnl's error code (`NLE_*`, positive).
    public var code: Int32

    public init(call: String, code: Int32) {
        self.call = call
        self.code = abs(code)
    }

    public var description: String {
        "\(call): \(String(cString: nl_geterror(code)))"
    }
}
