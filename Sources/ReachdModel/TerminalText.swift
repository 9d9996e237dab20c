extension String {
    /// This text made safe to print on a terminal, for text from a server, another user or the daemon: control
    /// characters (C0, DEL, C1), bidirectional controls and the line and paragraph separators written as visible escapes
    /// (`\x1b`, `\u{9b}`, `\u{202e}`), so that it can neither move the cursor, set the window title or the clipboard,
    /// start a line of its own nor reorder what is shown. Everything else is kept as it is.
    public var terminalSafe: String {
        guard unicodeScalars.contains(where: \.needsEscapeOnTerminal) else { return self }
        var safe = ""
        for scalar in unicodeScalars {
            if !scalar.needsEscapeOnTerminal {
                safe.unicodeScalars.append(scalar)
            } else if scalar.value < 0x80 {
                safe += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            } else {
                safe += "\\u{" + String(scalar.value, radix: 16) + "}"
            }
        }
        return safe
    }
}

extension Unicode.Scalar {
    /// A control character, a bidirectional control, or a line or paragraph separator.
    fileprivate var needsEscapeOnTerminal: Bool {
        properties.generalCategory == .control || properties.isBidiControl
            || properties.generalCategory == .lineSeparator || properties.generalCategory == .paragraphSeparator
    }
}
