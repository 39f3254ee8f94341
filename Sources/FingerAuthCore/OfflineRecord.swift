/// One offline login as the host records it: a compact JWS signed (RS256) by the device key
/// that logged in, one per line of the user's `offline-log` (root 0600, appended only), and
/// uploaded to the authenticator at the next online contact. Each record names the SHA-256
/// of the line before it (`prev`, base64url; empty for the first) and counts on from it
/// (`seq`), so that a record taken out or changed shows as a gap or a broken chain.
///
///     header  {"alg":"RS256","typ":"fingerauth-offline+jwt","kid":<device key>}
///     claims  {"seq","gid","sub","host","kid","jti","service","at","prev"}
package struct OfflineRecord: Equatable, Sendable {
    package var seq: Int64
    package var gid: String
    package var user: String
    package var host: String
    package var kid: String
    package var jti: String
    package var service: String
    /// Wall clock of the login, seconds.
    package var at: Int64
    package var previous: String

    package init(
        seq: Int64, gid: String, user: String, host: String, kid: String, jti: String, service: String,
        at: Int64, previous: String
    ) {
        self.seq = seq
        self.gid = gid
        self.user = user
        self.host = host
        self.kid = kid
        self.jti = jti
        self.service = service
        self.at = at
        self.previous = previous
    }

    package static let type = "fingerauth-offline+jwt"
    /// Bound of `seq` and `at` (2^40): whoever reads them adds to them without overflow.
    package static let maxSeq: Int64 = 1 << 40
    /// Most records one upload carries; older ones wait for the next contact.
    package static let maxPerUpload = 12

    package static func header(kid: String) -> JSONValue {
        .object([("alg", .string("RS256")), ("typ", .string(type)), ("kid", .string(kid))])
    }

    package var claims: JSONValue {
        .object([
            ("seq", .integer(seq)), ("gid", .string(gid)), ("sub", .string(user)), ("host", .string(host)),
            ("kid", .string(kid)), ("jti", .string(jti)), ("service", .string(service)), ("at", .integer(at)),
            ("prev", .string(previous)),
        ])
    }

    package init?(claims json: JSONValue) {
        guard let seq = json["seq"]?.int64Value, let gid = json["gid"]?.stringValue,
            let user = json["sub"]?.stringValue, let host = json["host"]?.stringValue,
            let kid = json["kid"]?.stringValue, let jti = json["jti"]?.stringValue,
            let service = json["service"]?.stringValue, let at = json["at"]?.int64Value,
            let previous = json["prev"]?.stringValue, seq > 0, seq <= OfflineRecord.maxSeq, at >= 0,
            at <= OfflineRecord.maxSeq
        else { return nil }
        self.init(
            seq: seq, gid: gid, user: user, host: host, kid: kid, jti: jti, service: service, at: at,
            previous: previous)
    }

    /// The record of one line (its signature not checked: that is the authenticator's job).
    package init?(line: String) {
        guard let jws = try? CompactJWT(parsing: line), jws.header["typ"]?.stringValue == OfflineRecord.type,
            let record = OfflineRecord(claims: jws.claims)
        else { return nil }
        self = record
    }
}
