/// Turns untrusted text (claims, paths, peer names) into something safe for a log line or
/// an audit column: printable ASCII without spaces or quotes, at most `limit` characters.
/// A compact JWT never fits in the path limit, so a token pasted into a URL stays out of logs.
package enum LogText {
    /// `text` with every other byte replaced by `?` and cut to `limit` bytes ("…" marks a cut).
    package static func clean(_ text: String, limit: Int = 128) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(min(text.utf8.count, limit) + 3)
        append(text, limit: limit, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `clean(text, limit:)`'s bytes to `out`.
    package static func append(_ text: String, limit: Int, to out: inout [UInt8]) {
        var count = 0
        for byte in text.utf8 {
            if count == limit {
                out.append(contentsOf: "...".utf8)
                break
            }
            let allowed = byte > 0x20 && byte < 0x7f && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
            out.append(allowed ? byte : UInt8(ascii: "?"))
            count += 1
        }
    }
}

extension LogText {
    /// `text` with control characters replaced by `?` (spaces kept), for free-form messages.
    package static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value >= 0x20 && $0.value != 0x7f ? $0 : "?" }))
    }
}
