import FingerAuthCore
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd audit [--user U] [--since T] [--limit N] [--json]`: the audit log, oldest
/// first. T is seconds since the epoch, `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM:SSZ` (UTC), or an
/// age such as `30m`, `12h`, `7d`.
enum AuditCommand {
    static func run(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let command = "audit"
        let (options, db) = try Admin.options(
            arguments, valued: ["user", "since", "limit"], switches: ["json"],
            command: command)
        let now = SystemClock().now()
        var since: Int64?
        if let text = options.optional("since") {
            guard let value = parseTime(text, now: now) else {
                throw UsageError(
                    message:
                        "audit: --since takes seconds since 1970, YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ or an age like 30m, 12h, 7d"
                )
            }
            since = value
        }
        let limit = try options.seconds("limit", default: 1_000_000, range: 1...1_000_000_000, command: command)
        let user = options.optional("user")
        return Admin.withStore(db, mustExist: true) { store, _ throws(StoreError) in
            let records = try store.auditRecords(AuditFilter(user: user, since: since, limit: Int(limit)))
            if options.flag("json") {
                print(JSONEncoding.encode(.array(records.map(json))))
            } else {
                Admin.printTable(
                    ["TIME", "EVENT", "OUTCOME", "REASON", "USER", "HOST", "SERVICE", "KID", "JTI", "PEER", "COUNT"],
                    records.map { r in
                        let e = r.event
                        // An unverified request's user is only claimed: shown as such, never as the user.
                        let user = e.user ?? e.claimedUser.map { "(claimed " + $0 + ")" } ?? ""
                        return [
                            Admin.utcTime(r.time), e.event.name, e.outcome.name, e.reason?.text ?? "", user,
                            e.host ?? "", serviceText(e),
                            e.kid ?? "", e.jti ?? "", e.peer ?? "", String(e.count),
                        ]
                    })
            }
            return 0
        }
    }

    /// The PAM service of a login (`sudo`, `fingerauth-test`), and for a screen locker's
    /// login through the agent the service the locker named: `fingerauth-agent/swaylock`.
    static func serviceText(_ event: AuditEvent) -> String {
        guard let service = event.service else { return "" }
        return event.clientService.map { service + "/" + $0 } ?? service
    }

    static func json(_ record: AuditRecord) -> JSONValue {
        let e = record.event
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return .object([
            ("id", .integer(record.id)), ("time", .integer(record.time)), ("event", .string(e.event.name)),
            ("user", text(e.user)), ("host", text(e.host)), ("kid", text(e.kid)), ("jti", text(e.jti)),
            ("outcome", .string(e.outcome.name)), ("reason", text(e.reason?.text)), ("peer", text(e.peer)),
            ("claimed_user", text(e.claimedUser)), ("verified", .bool(e.verified)), ("count", .integer(e.count)),
            ("rule", e.rule.map(JSONValue.integer) ?? .null), ("service", text(e.service)),
            ("client_service", text(e.clientService)), ("stages", e.stages?.json ?? .null),
            ("claimed_time", e.claimedTime.map(JSONValue.integer) ?? .null), ("approval", text(e.approval)),
            ("client_address", text(e.clientAddress)), ("workstation", text(e.workstation)),
        ])
    }

    /// Seconds since the epoch for `text`, or nil when it is none of the accepted forms.
    static func parseTime(_ text: String, now: Int64) -> Int64? {
        let digits = { (s: Substring) in !s.isEmpty && s.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        if digits(text[...]) { return Int64(text) }
        if let unit = text.last, let count = Int64(text.dropLast()), count >= 0, digits(text.dropLast()) {
            let scale: Int64
            switch unit {
            case "s": scale = 1
            case "m": scale = 60
            case "h": scale = 3600
            case "d": scale = 86_400
            default: return nil
            }
            let (age, overflow) = count.multipliedReportingOverflow(by: scale)
            return overflow ? nil : now - age
        }
        // YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ
        let bytes = Array(text.utf8)
        guard
            bytes.count == 10 || (bytes.count == 20 && bytes[10] == UInt8(ascii: "T") && bytes[19] == UInt8(ascii: "Z"))
        else {
            return nil
        }
        func number(_ range: Range<Int>) -> Int32? {
            let part = bytes[range]
            guard part.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return Int32(String(decoding: part, as: UTF8.self))
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        if bytes.count == 20 {
            guard bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
                let h = number(11..<13), let m = number(14..<16), let s = number(17..<19),
                h < 24, m < 60, s < 61
            else { return nil }
            parts.tm_hour = h
            parts.tm_min = m
            parts.tm_sec = s
        }
        let seconds = timegm(&parts)
        return seconds == -1 ? nil : Int64(seconds)
    }
}
