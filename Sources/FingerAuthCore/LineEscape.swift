/// Any text as one line: control bytes (below 0x20, and 0x7f) and `%` become `%XX`
/// (uppercase hex), every other byte stays. What a PAM item or a translated text holds
/// (a newline, a tab) can then neither end a line early nor start a forged one.
package enum LineEscape {
    /// `text` with its control bytes and `%` escaped.
    package static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if byte < 0x20 || byte == 0x7f || byte == UInt8(ascii: "%") {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0x0f))
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The text `encode` made; nil when `line` holds a control byte or a `%` not followed by
    /// two uppercase hex digits.
    package static func decode<Text: StringProtocol>(_ line: Text) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(line.utf8.count)
        var iterator = line.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte >= 0x20, byte != 0x7f else { return nil }
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            out.append(high << 4 | low)
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
