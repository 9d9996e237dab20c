#if canImport(Glibc)
import Glibc
#endif
import ReachdModel
import ReachdSystem

/// Reads device-type facts from `ROOT/class/net/IF/`; the root is `/sys` unless tests point it elsewhere.
public struct SysfsReader: Sendable {
    public var root: String

    public init(root: String = "/sys") { self.root = root }

    public func facts(for interface: String) -> SysfsFacts {
        // An interface name never contains '/', but the kernel's word is not re-checked here.
        guard !interface.contains("/"), interface != ".", interface != ".." else { return .none }
        let directory = "\(root)/class/net/\(interface)"
        return SysfsFacts(
            devtype: Self.devtype(inUevent: SmallFile.text(at: "\(directory)/uevent", limit: 65536)),
            hasWireless: Self.exists("\(directory)/wireless"),
            hasPhy80211: Self.exists("\(directory)/phy80211"),
            driver: Self.linkName("\(directory)/device/driver")
        )
    }

    /// The kernel counters of the link named `interface` with `index`, received plus sent bytes (`statistics/rx_bytes`
    /// + `tx_bytes`); nil when either cannot be read or is not a number, or the name is another link's by now.
    public func byteCount(for interface: String, index: Int32) -> UInt64? {
        guard !interface.contains("/"), interface != ".", interface != "..", !interface.isEmpty else { return nil }
        let directory = "\(root)/class/net/\(interface)"
        guard isIndex(index, of: directory),
              let received = Self.counter(SmallFile.bytes(at: "\(directory)/statistics/rx_bytes", limit: 64)),
              let sent = Self.counter(SmallFile.bytes(at: "\(directory)/statistics/tx_bytes", limit: 64)),
              isIndex(index, of: directory) else { return nil }
        return received.addingSaturated(sent)
    }

    /// Whether the link behind `directory` has `index` (`ifindex`; a tree without that file, a fake one, is taken as
    /// that link).
    private func isIndex(_ index: Int32, of directory: String) -> Bool {
        guard let bytes = SmallFile.bytes(at: "\(directory)/ifindex", limit: 64) else { return errno == ENOENT }
        return Self.counter(bytes) == UInt64(UInt32(bitPattern: index))
    }

    /// A decimal counter as sysfs writes it (digits, a line feed); nil for anything else.
    static func counter(_ bytes: [UInt8]?) -> UInt64? {
        guard var bytes, bytes.count < 64 else { return nil }
        if bytes.last == 0x0A { bytes.removeLast() }
        guard !bytes.isEmpty, bytes.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return UInt64(String(decoding: bytes, as: UTF8.self))
    }

    /// The last component of a symbolic link's target (`.../drivers/ipheth` → `ipheth`); nil when absent.
    static func linkName(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBufferPointer { readlink(path, $0.baseAddress!, $0.count) }
        guard n > 0, n < buffer.count else { return nil }
        let target = String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let name = target.split(separator: "/").last.map(String.init)
        return name?.isEmpty == false ? name : nil
    }

    /// The `DEVTYPE=` value of a uevent file's text.
    static func devtype(inUevent text: String?) -> String? {
        guard let text else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("DEVTYPE=") {
            return String(line.dropFirst("DEVTYPE=".count))
        }
        return nil
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }
}
