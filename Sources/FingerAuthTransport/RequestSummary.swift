import FingerAuthDomain

/// What one request did, for its log line: `fingerauthd: method=… path=… status=…`. Fields
/// are cleaned and capped (`LogText`): the path to 40 characters and every other value to
/// 64, so a JWT, token or key never fits in a line.
package struct RequestSummary: Sendable {
    package var method: String
    package var path: String
    package var status: Int
    /// What the service learnt: outcome, reason, user, key, token.
    package var facts: RequestFacts
    package var peer: String?
    /// Handling time in milliseconds, once known.
    package var milliseconds: Int?

    package init(
        method: String, path: String, status: Int, outcome: AuditOutcome? = nil, reason: AuditReason? = nil,
        sub: String? = nil, kid: String? = nil, jti: String? = nil, peer: String? = nil
    ) {
        self.method = method
        self.path = path
        self.status = status
        self.facts = RequestFacts(outcome: outcome, reason: reason, sub: sub, kid: kid, jti: jti)
        self.peer = peer
    }

    /// `method=… path=… status=… outcome=… reason=… sub=… [claimed=…] kid=… jti=… peer=… ms=…`
    package var line: String {
        String(decoding: lineBytes, as: UTF8.self)
    }

    /// The line as bytes, built in one buffer.
    package var lineBytes: [UInt8] {
        let s = self
        let f = facts
        var out: [UInt8] = []
        out.reserveCapacity(320)
        func field(_ name: String, _ value: String?, _ limit: Int = 64) {
            out.append(contentsOf: name.utf8)
            out.append(UInt8(ascii: "="))
            if let value, !value.isEmpty {
                LogText.append(value, limit: limit, to: &out)
            } else {
                out.append(UInt8(ascii: "-"))
            }
        }
        out.append(contentsOf: "fingerauthd: ".utf8)
        field("method", s.method, 10)
        field(" path", s.path, 40)
        out.append(contentsOf: " status=\(s.status)".utf8)
        field(" outcome", f.outcome?.name)
        field(" reason", f.reason?.text)
        field(" sub", f.sub)
        if let claimed = f.claimed { field(" claimed", claimed) }
        field(" kid", f.kid)
        field(" jti", f.jti)
        field(" peer", s.peer)
        out.append(contentsOf: " ms=\(s.milliseconds.map(String.init) ?? "-")\n".utf8)
        return out
    }
}
