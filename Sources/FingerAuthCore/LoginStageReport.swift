/// The login helper's own times for one login, sent beside the token in the login POST
/// (`{"jwt": …, "stages": {"ready_ms": 9, "match_ms": 640, "connect_ms": 3}}`) and kept on
/// the authenticator's audit row: from the helper's start to `READY` (reader armed and
/// authenticator reached), from `READY` to the match (the person's own time included), and
/// how long the connection to the authenticator took to open and answer its first request
/// (name lookup, TCP, TLS, one round trip). Whatever ends after the POST cannot be in it.
///
/// Nobody vouches for these numbers: the host chose them, and the token's signature does not
/// cover them. The authenticator keeps them for the record and the console's percentiles and
/// never decides anything by them.
package struct LoginStageReport: Equatable, Sendable {
    package var ready: Int64?
    package var match: Int64?
    package var connect: Int64?

    /// The largest time taken (ten minutes): a longer one, or a negative one, is not a time a
    /// login took, and the whole report is dropped.
    package static let maxMilliseconds: Int64 = 600_000

    package init(ready: Int64? = nil, match: Int64? = nil, connect: Int64? = nil) {
        self.ready = ready
        self.match = match
        self.connect = connect
    }

    /// The report in `value`: an object whose known members are whole numbers of
    /// milliseconds within bounds (unknown members are ignored, so that a newer helper can
    /// say more). nil when it is anything else, or names no known time.
    package init?(json value: JSONValue) {
        guard value.objectValue != nil else { return nil }
        var report = LoginStageReport()
        for name in Self.names {
            guard let member = value[name] else { continue }
            guard let number = member.int64Value, (0...Self.maxMilliseconds).contains(number) else { return nil }
            report.set(name, number)
        }
        guard report != LoginStageReport() else { return nil }
        self = report
    }

    /// The JSON object the helper sends: the times it has, nothing else.
    package var json: JSONValue {
        .object(Self.names.compactMap { name in self.time(name).map { (name, .integer($0)) } })
    }

    /// The members, in the order they are written.
    private static let names = ["ready_ms", "match_ms", "connect_ms"]

    /// The time a member names (no key paths: the module's Embedded build has none).
    private func time(_ name: String) -> Int64? {
        switch name {
        case "ready_ms": return ready
        case "match_ms": return match
        case "connect_ms": return connect
        default: return nil
        }
    }

    private mutating func set(_ name: String, _ value: Int64) {
        switch name {
        case "ready_ms": ready = value
        case "match_ms": match = value
        case "connect_ms": connect = value
        default: break
        }
    }
}
