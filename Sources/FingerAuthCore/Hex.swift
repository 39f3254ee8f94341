/// Lowercase hexadecimal, as digests are stored and shown (`sha256` columns, EK names).
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Two lowercase hex digits per byte of `bytes`.
    package static func lowercase(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Comparison of secrets in time that depends on their lengths only.
package enum ConstantTime {
    /// Equal length and bytes.
    package static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// Equal UTF-8 bytes.
    package static func equal(_ a: String, _ b: String) -> Bool {
        equal(Array(a.utf8), Array(b.utf8))
    }
}
