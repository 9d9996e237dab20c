import ReachdModel

/// networkd's lease file (option 43, env or JSON) and links file (`CAPTIVE_PORTAL=`), as bytes from a file another
/// process writes: no input may trap; option 43 stays within 1024 bytes and reads back the same when written as
/// networkd writes it; a captive-portal URI is non-empty printable ASCII of at most 2048 bytes, and an accepted one
/// is https.
@_cdecl("LLVMFuzzerTestOneInput")
public func networkdLeaseFuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    switch NetworkdLease.parse(bytes) {
    case .success(let lease):
        if let option = lease.vendorSpecific {
            guard option.count <= 1024 else { fatalError("option 43 of \(option.count) bytes") }
            let written = "# This is private data. Do not parse.\nVENDOR_SPECIFIC=\(hex(option))\n"
            guard case .success(let again) = NetworkdLease.parse(Array(written.utf8)), again == lease else {
                fatalError("option 43 does not read back: \(written)")
            }
            if lease.androidMetered != containsAndroidMetered(option) { fatalError("ANDROID_METERED misjudged") }
        }
    case .failure(.oversized(let size)):
        guard size == count, count > NetworkdLease.maximumSize else { fatalError("oversized \(size) of \(count) bytes") }
    case .failure:
        guard count <= NetworkdLease.maximumSize else { fatalError("a file over the maximum was read") }
    }
    if let uri = NetworkdLinkState.captivePortal(in: bytes) {
        guard !uri.isEmpty, uri.utf8.count <= 2048, uri.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            fatalError("captive portal URI kept: \(uri.debugDescription)")
        }
        if case .api(let api) = CaptivePortalAnnouncement(uri: uri), !api.lowercased().hasPrefix("https://") {
            fatalError("non-https API accepted: \(api)")
        }
    }
    return 0
}

private func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] }, as: UTF8.self)
}

/// The obvious search, to hold `androidMetered` against.
private func containsAndroidMetered(_ bytes: [UInt8]) -> Bool {
    String(decoding: bytes.map { $0 < 0x80 ? $0 : 0x3f }, as: UTF8.self).contains("ANDROID_METERED")
}
