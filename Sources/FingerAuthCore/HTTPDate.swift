/// The HTTP `Date` header (RFC 9110 IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`) as
/// seconds since the epoch; nil for anything else.
package enum HTTPDate {
    package static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    package static func parse(_ text: String) -> Int64? {
        // HTTPClient keeps the header's CRLF: "\r\n" is one Character, which its
        // prefix(while:) does not stop at. Newlines are dropped here.
        let parts = text.filter { !$0.isNewline }.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT",
            let day = Int64(parts[1]), let monthIndex = months.firstIndex(of: String(parts[2])),
            let year = Int64(parts[3])
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let h = Int64(clock[0]), let m = Int64(clock[1]), let s = Int64(clock[2]),
            (1...31).contains(day), (0...23).contains(h), (0...59).contains(m), (0...60).contains(s),
            (1970...9999).contains(year)
        else { return nil }
        return daysFromCivil(year: year, month: Int64(monthIndex) + 1, day: day) * 86400 + h * 3600 + m * 60 + s
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    package static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }
}
