/// `application/x-www-form-urlencoded` bodies (RFC 6749 appendix B): `name=value` pairs
/// joined by `&`, `+` for space, `%XX` escapes. Strict: a repeated name, a bad escape or
/// bytes that are not UTF-8 make the whole body invalid (RFC 6749 §3.2: parameters must
/// not be repeated).
package enum FormBody {
    /// The pairs of `body`, or nil when it is not a valid form.
    package static func parse(_ body: [UInt8]) -> [String: String]? {
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), !name.isEmpty else { return nil }
            let value = parts.count == 2 ? decode(parts[1]) : ""
            guard let value, fields[name] == nil else { return nil }
            fields[name] = value
        }
        return fields
    }

    /// Percent-decoding with `+` as a space; nil for a malformed escape or bytes that are
    /// not UTF-8. The console's forms and query values use it too.
    package static func decode<Bytes: Collection<UInt8>>(_ raw: Bytes) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var iterator = raw.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): out.append(0x20)
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                out.append(high << 4 | low)
            default: out.append(byte)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
