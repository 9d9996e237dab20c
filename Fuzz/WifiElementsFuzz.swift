import ReachdModel

/// A BSS's information elements as wpa_supplicant hands them over, bytes any transmitter chose: no input may trap;
/// the elements written back are the input up to its cut-off tail, and read back the same; the tail is a header or
/// an element running past the end; the hints equal those of an independent scan, and an element put before the
/// list changes none of them.
@_cdecl("LLVMFuzzerTestOneInput")
public func wifiElementsFuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    switch WifiElements.parse(bytes) {
    case .failure(.oversized(let size)):
        guard size == count, count > WifiElements.maximumSize else { fatalError("oversized \(size) of \(count) bytes") }
    case .success(let list):
        guard count <= WifiElements.maximumSize else { fatalError("\(count) bytes read") }
        let kept = count - list.truncatedBytes
        guard (0...256).contains(list.truncatedBytes), kept >= 0 else { fatalError("\(list.truncatedBytes) bytes cut of \(count)") }
        let written = encode(list.elements)
        guard written == Array(bytes[..<kept]) else { fatalError("\(list.elements) written back is not the input") }
        guard case .success(let again) = WifiElements.parse(written), again == WifiElements(elements: list.elements) else {
            fatalError("\(list.elements) does not read back")
        }
        if list.truncatedBytes >= 2, Int(bytes[kept + 1]) <= list.truncatedBytes - 2 {
            fatalError("a whole element of \(bytes[kept + 1]) bytes cut off")
        }
        guard list.hints == naiveHints(bytes) else { fatalError("hints \(list.hints), a plain scan says \(naiveHints(bytes))") }
        if count + 3 <= WifiElements.maximumSize {
            guard case .success(let moved) = WifiElements.parse([0xDD, 0x01, UInt8(truncatingIfNeeded: count)] + bytes),
                moved.elements.dropFirst().elementsEqual(list.elements), moved.hints == list.hints
            else { fatalError("an element put first changed the list or its hints") }
        }
    }
    return 0
}

/// The elements as a transmitter writes them: id, length, body.
private func encode(_ elements: [WifiElement]) -> [UInt8] {
    elements.flatMap { element -> [UInt8] in
        guard element.body.count <= 255 else { fatalError("a body of \(element.body.count) bytes") }
        return [element.id, UInt8(element.body.count)] + element.body
    }
}

/// The hints by another road: a cursor over the raw bytes, the cost attribute taken as the `NLM_CONNECTION_COST`
/// number Windows' documentation gives.
private func naiveHints(_ bytes: [UInt8]) -> WifiHints {
    var hints = WifiHints()
    var rest = bytes[...]
    while rest.count >= 2, rest.count - 2 >= Int(rest[rest.startIndex + 1]) {
        let body = rest.dropFirst(2).prefix(Int(rest[rest.startIndex + 1]))
        if rest.first == 0xDD {
            let head = Array(body.prefix(4))
            if head == [0x00, 0x50, 0xF2, 0x11], body.count >= 8, hints.networkCost == nil {
                let cost = body.dropFirst(4).prefix(4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                let levels: [UInt32: CostLevel] = [0x1: .unrestricted, 0x2: .fixed, 0x4: .variable]
                if let level = levels[cost & 0xFFFF] {
                    hints.networkCost = ConnectionCost(
                        level: level, roaming: cost & 0x4_0000 != 0, approachingDataLimit: cost & 0x8_0000 != 0,
                        overDataLimit: cost & 0x1_0000 != 0)
                }
            }
            if head == [0x00, 0x17, 0xF2, 0x06] { hints.applePersonalHotspot = true }
        }
        rest = rest.dropFirst(2 + body.count)
    }
    return hints
}
