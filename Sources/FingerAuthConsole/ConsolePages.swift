import FingerAuthCore
import FingerAuthDomain

/// The console's HTML: every page built here from escaped text, one stylesheet served by
/// the binary (`/console.css`), no script, no external asset.
package enum ConsoleHTML {
    /// Text made inert for HTML element content and double-quoted attributes.
    package static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                // Control characters are shown, not passed on.
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS` UTC.
    package static func time(_ seconds: Int64) -> String { UTCTime.seconds(seconds) }

    /// `YYYY-MM-DD`, `YYYY-MM-DD HH:MM` or `YYYY-MM-DDTHH:MM` (UTC) as seconds since the
    /// epoch; nil for anything else.
    package static func parseTime(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10 || bytes.count == 16 else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            year >= 1970, (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var seconds: Int64 = 0
        if bytes.count == 16 {
            guard bytes[10] == UInt8(ascii: " ") || bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"),
                let hour = number(11..<13), let minute = number(14..<16), hour < 24, minute < 60
            else { return nil }
            seconds = hour * 3600 + minute * 60
        }
        // Days from civil (Howard Hinnant's algorithm), the inverse of `time`.
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        let result = days * 86_400 + seconds
        // 31 February and its kind: refused rather than rolled over into March.
        return time(result).hasPrefix(String(text.prefix(10))) ? result : nil
    }

    /// A whole page: the navigation (when signed in), the title, the body.
    package static func page(title: String, admin: String?, csrf: String?, current: String = "", body: String) -> String
    {
        var nav = ""
        if let admin, let csrf {
            let links = [
                ("/overview", "Overview"), ("/audit", "Audit log"), ("/keys", "Keys"), ("/hosts", "Hosts"),
                ("/approvals", "Approvals"), ("/policy", "Policy"),
            ]
            .map { path, name in
                "<a href=\"\(path)\"\(path == current ? " class=\"current\"" : "")>\(name)</a>"
            }.joined(separator: " ")
            nav = """
                <nav>\(links)
                <form class="signout" method="post" action="/signout">\(csrfField(csrf))\
                <span class="who">\(escape(admin))</span> <button type="submit">Sign out</button></form></nav>
                """
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title)) · FingerAuth</title>
            <link rel="stylesheet" href="/console.css"></head>
            <body>\(nav)<main><h1>\(escape(title))</h1>
            \(body)
            </main></body></html>
            """
    }

    /// The note an action leaves on the page it returns to (`#message`); empty for none.
    package static func message(_ text: String?) -> String {
        text.map { "<p class=\"message\" id=\"message\">\(escape($0))</p>" } ?? ""
    }

    package static func csrfField(_ token: String) -> String {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(escape(token))\">"
    }

    /// A table; cells are HTML already (escape what comes from outside before).
    /// A table of `rows` (HTML already escaped); `classes` gives a row its class (by index).
    package static func table(id: String, headers: [String], rows: [[String]], classes: [Int: String] = [:]) -> String {
        let head = headers.map { "<th>\(escape($0))</th>" }.joined()
        let body = rows.enumerated().map { index, row in
            (classes[index].map { "<tr class=\"\($0)\">" } ?? "<tr>") + row.map { "<td>\($0)</td>" }.joined() + "</tr>"
        }.joined(separator: "\n")
        return "<table id=\"\(id)\"><thead><tr>\(head)</tr></thead><tbody>\n\(body)\n</tbody></table>"
    }

    /// A one-button form posting `fields` (and the CSRF token) to `action`.
    package static func button(_ label: String, action: String, fields: [(String, String)], csrf: String, cls: String)
        -> String
    {
        let hidden = fields.map { "<input type=\"hidden\" name=\"\(escape($0.0))\" value=\"\(escape($0.1))\">" }
            .joined()
        return "<form class=\"inline\" method=\"post\" action=\"\(action)\">\(hidden)\(csrfField(csrf))"
            + "<button type=\"submit\" class=\"\(cls)\">\(escape(label))</button></form>"
    }

    static let stylesheet = """
        body{font-family:system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
        nav{background:#1d2430;padding:.6em 1em}nav a{color:#cfd6e2;margin-right:1.2em;text-decoration:none}
        nav a.current{color:#fff;font-weight:600}form.signout{float:right;margin:0;color:#cfd6e2}
        main{padding:1em 2em;max-width:78em}h1{font-size:1.4em}
        table{border-collapse:collapse;background:#fff;margin:1em 0;font-size:.9em}
        th,td{border:1px solid #d5dae1;padding:.3em .6em;text-align:left;vertical-align:top}th{background:#eef1f5}
        form.inline{display:inline;margin:0}button{cursor:pointer}button.danger{color:#9b1c1c}
        .figures span{display:inline-block;margin-right:2em;font-size:1.1em}.message{padding:.5em 1em;background:#fff3cd}
        .error{padding:.5em 1em;background:#fde2e1}svg{background:#fff;border:1px solid #d5dae1}
        .accepted{fill:#2f855a}.refused{fill:#c53030}label{display:inline-block;margin-right:1em}
        tr.attention td{background:#fde2e1}tr.attention mark{background:#c53030;color:#fff;padding:0 .3em}
        code{font-size:.85em}form.add p,form.test p{margin:.4em 0}.decision{padding:.5em 1em;background:#e6f0ff}
        """
}
