/// UTC times from seconds since the epoch, in plain Swift (the module has no Foundation):
/// the civil date of the day count (H. Hinnant's days-to-civil).
package enum UTCTime {
    /// `2026-12-06 14:00 UTC`.
    package static func minutes(_ seconds: Int64) -> String {
        let (date, second) = civil(seconds)
        return date + " " + two(second / 3600) + ":" + two(second % 3600 / 60) + " UTC"
    }

    /// `2026-12-06 14:00:05`.
    package static func seconds(_ seconds: Int64) -> String {
        let (date, second) = civil(seconds)
        return date + " " + two(second / 3600) + ":" + two(second % 3600 / 60) + ":" + two(second % 60)
    }

    /// `YYYY-MM-DD` and the second of that day.
    private static func civil(_ seconds: Int64) -> (String, Int64) {
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let secondOfDay = seconds - days * 86400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return ("\(year)-\(two(month))-\(two(day))", secondOfDay)
    }

    private static func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : String(n) }
}
