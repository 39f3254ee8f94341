/// base64url without padding (RFC 4648 §5), as JWTs and JWKs use it.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    package static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let n = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
        } else if rest == 2 {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    package static func encode(_ text: String) -> String { encode(Array(text.utf8)) }

    /// Strict decoding: no padding, no white space, no characters outside the alphabet,
    /// and unused trailing bits must be zero (one text per byte string). Nil when refused.
    package static func decode(_ text: String) -> [UInt8]? { decode(Array(text.utf8)) }

    package static func decode(_ chars: [UInt8]) -> [UInt8]? {
        if chars.count % 4 == 1 { return nil }
        var out = [UInt8](repeating: 0, count: chars.count * 3 / 4)
        let ok = chars.withUnsafeBufferPointer { input -> Bool in
            out.withUnsafeMutableBufferPointer { output -> Bool in
                var i = 0
                var o = 0
                // Four characters, three bytes at a time.
                while i + 4 <= input.count {
                    let a = table[Int(input[i])]
                    let b = table[Int(input[i + 1])]
                    let c = table[Int(input[i + 2])]
                    let d = table[Int(input[i + 3])]
                    if (a | b | c | d) & 0x40 != 0 { return false }
                    let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    output[o] = UInt8(truncatingIfNeeded: v >> 16)
                    output[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    output[o + 2] = UInt8(truncatingIfNeeded: v)
                    i += 4
                    o += 3
                }
                let rest = input.count - i
                guard rest > 0 else { return true }
                let a = table[Int(input[i])]
                let b = table[Int(input[i + 1])]
                let c = rest == 3 ? table[Int(input[i + 2])] : 0
                if (a | b | c) & 0x40 != 0 { return false }
                let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
                output[o] = UInt8(truncatingIfNeeded: v >> 16)
                // Unused trailing bits must be zero (one text per byte string).
                if rest == 2 { return v & 0xffff == 0 }
                output[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                return v & 0xff == 0
            }
        }
        return ok ? out : nil
    }

    /// The 6-bit value of each byte of the alphabet; 0x40 for every other byte.
    private static let table: [UInt8] = (0..<256).map { value(of: UInt8($0)) ?? 0x40 }

    /// Whether `c` is one of the 64 characters of the base64url alphabet (no padding).
    package static func isAlphabet(_ c: UInt8) -> Bool { value(of: c) != nil }

    private static func value(of c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): return 62
        case UInt8(ascii: "_"): return 63
        default: return nil
        }
    }
}
