/// Serializes a `JSONValue` as compact JSON text (no spaces, members in their order).
/// Works on UTF-8 bytes: a string's bytes are copied as they are, but for `"`, `\` and
/// control characters, which are escaped.
package enum JSONEncoding {
    package static func encode(_ value: JSONValue) -> String {
        String(decoding: encodeBytes(value), as: UTF8.self)
    }

    /// The compact JSON text of `value`, as UTF-8 bytes.
    package static func encodeBytes(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, to: &out)
        return out
    }

    private static func write(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: out += Array("null".utf8)
        case let .bool(b): out += Array((b ? "true" : "false").utf8)
        case let .number(text): out.append(contentsOf: text.utf8)
        case let .string(s): writeString(s, to: &out)
        case let .array(items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(item, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case let .object(members):
            out.append(UInt8(ascii: "{"))
            for (i, member) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeString(member.0, to: &out)
                out.append(UInt8(ascii: ":"))
                write(member.1, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "\n"): out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20, 0x7f:
                out += [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xf)],
                ]
            default:
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
