import FingerAuthCore

/// One line of `fingerauth status`: what was checked, how it went, and the fix.
struct StatusCheck {
    enum Result: String {
        case pass, warn, fail, skip
    }

    let name: String
    let result: Result
    let detail: String
    let fix: String?

    static func pass(_ name: String, _ detail: String) -> StatusCheck {
        StatusCheck(name: name, result: .pass, detail: detail, fix: nil)
    }
    static func warn(_ name: String, _ detail: String, fix: String? = nil) -> StatusCheck {
        StatusCheck(name: name, result: .warn, detail: detail, fix: fix)
    }
    static func fail(_ name: String, _ detail: String, fix: String) -> StatusCheck {
        StatusCheck(name: name, result: .fail, detail: detail, fix: fix)
    }
    static func skip(_ name: String, _ detail: String) -> StatusCheck {
        StatusCheck(name: name, result: .skip, detail: detail, fix: nil)
    }

    /// The line for a terminal: `[ok]`, `[warn]`, `[FAIL]` or `[skip]`, the name, the detail,
    /// and the fix on the next line.
    var text: String {
        let mark: String
        switch result {
        case .pass: mark = "[ok]  "
        case .warn: mark = "[warn]"
        case .fail: mark = "[FAIL]"
        case .skip: mark = "[skip]"
        }
        let label = name + String(repeating: " ", count: max(0, 14 - name.count))
        var out = "\(mark) \(label) \(detail)"
        if let fix { out += "\n       " + String(repeating: " ", count: 14) + " fix: " + fix }
        return out
    }

    var json: JSONValue {
        .object([
            ("name", .string(name)), ("status", .string(result.rawValue)), ("detail", .string(detail)),
            ("fix", fix.map { .string($0) } ?? .null),
        ])
    }
}
