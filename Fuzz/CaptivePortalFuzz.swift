import ReachdModel

/// An RFC 8908 answer's body, and the same bytes as an RFC 8910 announced URI: no input may trap; a status never
/// keeps a URL that is not https; a status written back as JSON reads back equal; the next query is 5 to 600 s away.
@_cdecl("LLVMFuzzerTestOneInput")
public func captivePortalFuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    let parsed = CaptivePortalStatus.parse(bytes)
    switch parsed {
    case .success(let status):
        for url in [status.userPortalURL, status.venueInfoURL].compactMap({ $0 }) {
            guard url.lowercased().hasPrefix("https://"), url.utf8.count <= 2048, url.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
                fatalError("a status kept \(url.debugDescription)")
            }
        }
        let written = json(status)
        guard case .success(let again) = CaptivePortalStatus.parse(Array(written.utf8)), again == status else {
            fatalError("\(written) does not read back as \(status)")
        }
    case .failure(.oversized(let size)):
        guard size == count, count > CaptivePortalStatus.maximumBody else { fatalError("oversized \(size) of \(count) bytes") }
    case .failure:
        break
    }
    let seconds = CaptivePortalSchedule.secondsUntilNextQuery(after: try? parsed.get(), failures: count % 40 - 10)
    guard (5...600).contains(seconds) else { fatalError("next query in \(seconds) s") }

    let uri = String(decoding: bytes, as: UTF8.self)
    if case .api(let api) = CaptivePortalAnnouncement(uri: uri) {
        guard api == uri, api.lowercased().hasPrefix("https://"), api.utf8.count <= 2048 else { fatalError("accepted \(api.debugDescription)") }
    }
    return 0
}

/// The status as an `application/captive+json` body, every field it holds written.
private func json(_ status: CaptivePortalStatus) -> String {
    var members = ["\"captive\":\(status.captive)"]
    if let url = status.userPortalURL { members.append("\"user-portal-url\":\(quoted(url))") }
    if let url = status.venueInfoURL { members.append("\"venue-info-url\":\(quoted(url))") }
    if let extend = status.canExtendSession { members.append("\"can-extend-session\":\(extend)") }
    if let seconds = status.secondsRemaining { members.append("\"seconds-remaining\":\(seconds)") }
    if let bytes = status.bytesRemaining { members.append("\"bytes-remaining\":\(bytes)") }
    return "{" + members.joined(separator: ",") + "}"
}

private func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case _ where scalar.value < 0x20: out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
