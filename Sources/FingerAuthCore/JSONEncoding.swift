/// Serializes a `JSONValue` as compact JSON text (no spaces, members in their order).
public enum JSONEncoding {
    public static func encode(_ value: JSONValue) -> String {
        var out = ""
        write(value, to: &out)
        return out
    }

    /// The compact JSON text of `value`, as UTF-8 bytes.
    public static func encodeBytes(_ value: JSONValue) -> [UInt8] {
        Array(encode(value).utf8)
    }

    private static func write(_ value: JSONValue, to out: inout String) {
        switch value {
        case .null: out += "null"
        case let .bool(b): out += b ? "true" : "false"
        case let .number(text): out += text
        case let .string(s): writeString(s, to: &out)
        case let .array(items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                write(item, to: &out)
            }
            out += "]"
        case let .object(members):
            out += "{"
            for (i, member) in members.enumerated() {
                if i > 0 { out += "," }
                writeString(member.0, to: &out)
                out += ":"
                write(member.1, to: &out)
            }
            out += "}"
        }
    }

    private static let hexDigits = Array("0123456789abcdef")

    private static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7f {
                    let v = Int(scalar.value)
                    out += "\\u00"
                    out.append(hexDigits[(v >> 4) & 0xf])
                    out.append(hexDigits[v & 0xf])
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
