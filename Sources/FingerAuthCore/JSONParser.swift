/// Why a JSON text was refused.
package enum JSONError: Error, Equatable, Sendable {
    case tooLarge
    case tooDeep
    case invalid(offset: Int)
    case duplicateName(String)
}

/// A strict RFC 8259 parser over UTF-8 bytes: one value, no trailing data, no duplicate
/// member names, bounded size and depth. It never traps on any input.
package struct JSONParser {
    /// Largest accepted input, in bytes.
    package var maxBytes: Int
    /// Deepest accepted nesting of arrays and objects.
    package var maxDepth: Int

    package init(maxBytes: Int = 64 * 1024, maxDepth: Int = 32) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
    }

    package func parse(_ text: String) throws(JSONError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    package func parse(_ bytes: [UInt8]) throws(JSONError) -> JSONValue {
        guard bytes.count <= maxBytes else { throw .tooLarge }
        var reader = Reader(bytes: bytes, maxDepth: maxDepth)
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.atEnd else { throw .invalid(offset: reader.offset) }
        return value
    }
}

private struct Reader {
    let bytes: [UInt8]
    let maxDepth: Int
    var offset = 0

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    var atEnd: Bool { offset >= bytes.count }

    func peek() -> UInt8? { offset < bytes.count ? bytes[offset] : nil }

    mutating func next() throws(JSONError) -> UInt8 {
        guard offset < bytes.count else { throw .invalid(offset: offset) }
        let b = bytes[offset]
        offset += 1
        return b
    }

    mutating func skipSpace() {
        while let b = peek(), b == 0x20 || b == 0x09 || b == 0x0a || b == 0x0d { offset += 1 }
    }

    mutating func expect(_ literal: String) throws(JSONError) {
        for b in literal.utf8 where try next() != b { throw .invalid(offset: offset - 1) }
    }

    mutating func value(depth: Int) throws(JSONError) -> JSONValue {
        guard let b = peek() else { throw .invalid(offset: offset) }
        switch b {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw .invalid(offset: offset)
        }
    }

    mutating func object(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= maxDepth else { throw .tooDeep }
        offset += 1
        var members: [(String, JSONValue)] = []
        skipSpace()
        if peek() == UInt8(ascii: "}") {
            offset += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard peek() == UInt8(ascii: "\"") else { throw .invalid(offset: offset) }
            let name = try string()
            if members.contains(where: { $0.0 == name }) { throw .duplicateName(name) }
            skipSpace()
            guard try next() == UInt8(ascii: ":") else { throw .invalid(offset: offset - 1) }
            skipSpace()
            members.append((name, try value(depth: depth)))
            skipSpace()
            switch try next() {
            case UInt8(ascii: ","): continue
            case UInt8(ascii: "}"): return .object(members)
            default: throw .invalid(offset: offset - 1)
            }
        }
    }

    mutating func array(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= maxDepth else { throw .tooDeep }
        offset += 1
        var items: [JSONValue] = []
        skipSpace()
        if peek() == UInt8(ascii: "]") {
            offset += 1
            return .array(items)
        }
        while true {
            skipSpace()
            items.append(try value(depth: depth))
            skipSpace()
            switch try next() {
            case UInt8(ascii: ","): continue
            case UInt8(ascii: "]"): return .array(items)
            default: throw .invalid(offset: offset - 1)
            }
        }
    }

    mutating func number() throws(JSONError) -> JSONValue {
        let start = offset
        if peek() == UInt8(ascii: "-") { offset += 1 }
        guard let first = peek(), isDigit(first) else { throw .invalid(offset: offset) }
        offset += 1
        if first != UInt8(ascii: "0") { while let b = peek(), isDigit(b) { offset += 1 } }
        if peek() == UInt8(ascii: ".") {
            offset += 1
            guard let b = peek(), isDigit(b) else { throw .invalid(offset: offset) }
            while let b = peek(), isDigit(b) { offset += 1 }
        }
        if let e = peek(), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            offset += 1
            if let s = peek(), s == UInt8(ascii: "+") || s == UInt8(ascii: "-") { offset += 1 }
            guard let b = peek(), isDigit(b) else { throw .invalid(offset: offset) }
            while let b = peek(), isDigit(b) { offset += 1 }
        }
        return .number(String(decoding: bytes[start..<offset], as: UTF8.self))
    }

    func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    mutating func hex4() throws(JSONError) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = try next()
            let d: UInt32
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(b - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(b - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(b - UInt8(ascii: "A") + 10)
            default: throw .invalid(offset: offset - 1)
            }
            v = v << 4 | d
        }
        return v
    }

    mutating func string() throws(JSONError) -> String {
        offset += 1
        // Fast path: most strings (a whole JWT among them) hold no escape; such a run up to
        // its closing quote becomes a String at once, checked as strict UTF-8.
        var end = offset
        var highBits: UInt8 = 0
        while end < bytes.count {
            let b = bytes[end]
            if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b < 0x20 { break }
            highBits |= b
            end += 1
        }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            let run = bytes[offset..<end]
            // ASCII is valid UTF-8 as it stands; `String(validating:)` over a slice is generic
            // and unspecialised (a runtime metadata lookup per string), so it is kept for the rest.
            let s =
                highBits < 0x80
                ? run.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
                : String(validating: run, as: UTF8.self)
            guard let s else { throw .invalid(offset: offset) }
            offset = end + 1
            return s
        }
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush(_ raw: inout [UInt8], into scalars: inout String.UnicodeScalarView) throws(JSONError) {
            guard !raw.isEmpty else { return }
            // Strict UTF-8: invalid sequences are refused, not repaired.
            guard let s = String(validating: raw, as: UTF8.self) else { throw .invalid(offset: 0) }
            scalars.append(contentsOf: s.unicodeScalars)
            raw.removeAll(keepingCapacity: true)
        }
        while true {
            let b = try next()
            switch b {
            case UInt8(ascii: "\""):
                try flush(&raw, into: &scalars)
                return String(scalars)
            case UInt8(ascii: "\\"):
                try flush(&raw, into: &scalars)
                let e = try next()
                switch e {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if code >= 0xD800 && code < 0xDC00 {
                        guard try next() == UInt8(ascii: "\\"), try next() == UInt8(ascii: "u") else {
                            throw .invalid(offset: offset)
                        }
                        let low = try hex4()
                        guard low >= 0xDC00 && low < 0xE000 else { throw .invalid(offset: offset) }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw .invalid(offset: offset) }
                    scalars.append(scalar)
                default: throw .invalid(offset: offset - 1)
                }
            default:
                guard b >= 0x20 else { throw .invalid(offset: offset - 1) }
                raw.append(b)
            }
        }
    }
}
