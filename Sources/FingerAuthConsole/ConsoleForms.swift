import FingerAuthDomain
import FingerAuthWeb

/// `application/x-www-form-urlencoded` bodies and query values, and the cookie header: the
/// little parsing the console needs, strict and bounded.
package enum ConsoleForms {
    /// Percent-decoding with `+` as a space; nil for a malformed escape or invalid UTF-8.
    package static func decode(_ text: Substring) -> String? { FormBody.decode(text.utf8) }

    /// The fields of a form body (at most 32; a repeated name keeps its first value).
    package static func fields(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        let text = String(decoding: body, as: UTF8.self)
        for pair in text.split(separator: "&", maxSplits: 32, omittingEmptySubsequences: true).prefix(32) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = parts.first.flatMap(decode), fields[name] == nil else { continue }
            fields[name] = parts.count == 2 ? decode(parts[1]) ?? "" : ""
        }
        return fields
    }

    /// The value of cookie `name` in a `Cookie` header.
    package static func cookie(_ header: String?, _ name: String) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let trimmed = part.drop { $0 == " " }
            let pieces = trimmed.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if pieces.count == 2, pieces[0] == name { return String(pieces[1]) }
        }
        return nil
    }

    /// A query value, decoded; nil when absent, empty or malformed.
    static func query(_ request: HTTPRequest, _ name: String) -> String? {
        guard let raw = request.query[name], !raw.isEmpty, let value = decode(Substring(raw)), !value.isEmpty else {
            return nil
        }
        return value
    }
}
