/// Untrusted text (a user, host, reason or service out of the registry; what a host or a
/// key holder wrote) made safe for a terminal: every control character — C0 (ESC among
/// them), DEL and C1 (U+0080…U+009F, CSI and OSC in 8-bit form) — is shown as `\xNN`, so
/// that no escape sequence, title change or forged line reaches the reader's terminal.
package enum TerminalText {
    /// `text` with its control characters shown as `\xNN`; with `keepingLineBreaks`, line
    /// feeds and tabs stay (a command's own multi-line output), every other control goes.
    package static func escaped(_ text: String, keepingLineBreaks: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0, keepingLineBreaks) }) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            if isControl(scalar, keepingLineBreaks) {
                out += "\\x" + Hex.lowercase([UInt8(truncatingIfNeeded: scalar.value)])
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func isControl(_ scalar: Unicode.Scalar, _ keepingLineBreaks: Bool) -> Bool {
        let value = scalar.value
        if keepingLineBreaks && (value == 0x0A || value == 0x09) { return false }
        return value < 0x20 || (value >= 0x7F && value <= 0x9F)
    }
}
