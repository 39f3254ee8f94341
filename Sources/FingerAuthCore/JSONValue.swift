/// A JSON document as plain Swift values, without Foundation (the PAM module links no
/// Foundation). Numbers keep their literal text so that integers such as `exp` stay exact.
package enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// The number's literal text, validated by the parser (RFC 8259 grammar).
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in document order. The parser refuses duplicate names.
    case object([(String, JSONValue)])

    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            guard a.count == b.count else { return false }
            for (x, y) in zip(a, b) where x.0 != y.0 || x.1 != y.1 { return false }
            return true
        default: return false
        }
    }

    /// A whole number in `Int64` range; nil for anything else (fractions, exponents, text).
    package static func integer(_ value: Int64) -> JSONValue { .number(String(value)) }

    /// The member called `name`, if this is an object that has one.
    package subscript(name: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        for (key, value) in members where key == name { return value }
        return nil
    }

    package var stringValue: String? {
        if case let .string(s) = self { return s }
        return nil
    }

    package var boolValue: Bool? {
        if case let .bool(b) = self { return b }
        return nil
    }

    /// The value as `Int64` when it is an integer literal (no fraction, no exponent) in range.
    package var int64Value: Int64? {
        guard case let .number(text) = self else { return nil }
        guard !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }) else {
            return nil
        }
        return Int64(text)
    }

    package var arrayValue: [JSONValue]? {
        if case let .array(a) = self { return a }
        return nil
    }

    package var objectValue: [(String, JSONValue)]? {
        if case let .object(o) = self { return o }
        return nil
    }
}
