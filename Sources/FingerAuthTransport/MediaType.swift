/// Comparison of a `Content-Type` header with one media type, byte by byte.
enum MediaType {
    /// True when `header`'s type (the part before any `;` parameters, without surrounding
    /// spaces or tabs) is `expected`, compared case-insensitively in ASCII. `expected` must
    /// be lower-case ASCII.
    static func `is`(_ header: String, _ expected: StaticString) -> Bool {
        var type = header.utf8.prefix { $0 != UInt8(ascii: ";") }[...]
        while let first = type.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            type = type.dropFirst()
        }
        while let last = type.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { type = type.dropLast() }
        // withUTF8Buffer, not utf8Start: it also holds for a literal stored as one scalar.
        return expected.withUTF8Buffer { wanted in
            guard type.count == wanted.count else { return false }
            return zip(type, wanted).allSatisfy { byte, lower in
                let folded = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                return folded == lower
            }
        }
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }
}
