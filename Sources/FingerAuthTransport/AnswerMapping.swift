import FingerAuthCore
import FingerAuthDomain
import FingerAuthWeb

/// How an operation's `Outcome` is said on the wire: its status, its headers and its JSON
/// body. One place for every status the login API answers; the OAuth endpoints say
/// refusals of the token in OAuth's words (RFC 6749 §5.2: 400 `invalid_grant`, and
/// `temporarily_unavailable`).
package enum AnswerMapping {
    /// The answer to `outcome` of `operation`.
    package static func answer(_ outcome: Outcome, of operation: ServiceOperation) -> HTTPResponse {
        let oauth = operation == .accessToken || operation == .introspect
        if let answer = approvalAnswer(outcome) { return answer }
        if operation == .registerHostKey, let answer = hostKeyAnswer(outcome) { return answer }
        switch outcome {
        case let .health(available):
            return HTTPResponse(
                status: available ? 200 : 503,
                json: .object([("ok", .bool(available)), ("store", .string(available ? "available" : "unavailable"))]))
        case let .metrics(text):
            return HTTPResponse(status: 200, text: text, contentType: "text/plain; version=0.0.4; charset=utf-8")
        case let .loggedIn(accepted):
            var fields: [(String, JSONValue)] = [
                ("ok", .bool(true)), ("sub", .string(accepted.user)), ("kid", .string(accepted.kid)),
                ("jti", .string(accepted.jti)),
            ]
            if let offline = accepted.offline {
                fields += [
                    ("offline_grant", offline.grant.map(JSONValue.string) ?? .null), ("grant_keys", offline.keys),
                ]
            }
            return HTTPResponse(status: 200, json: .object(fields))
        case let .accessTokenIssued(token, lifetime):
            return HTTPResponse(
                status: 200,
                json: .object([
                    ("access_token", .string(token)), ("token_type", .string("Bearer")),
                    ("expires_in", .integer(lifetime)),
                ]), headers: [("Pragma", "no-cache")])
        case let .introspected(state):
            guard let state else { return HTTPResponse(status: 200, json: .object([("active", .bool(false))])) }
            return HTTPResponse(
                status: 200,
                json: .object([
                    ("active", .bool(true)), ("sub", .string(state.user)), ("host", .string(state.host)),
                    ("kid", .string(state.kid)), ("iat", .integer(state.created)), ("exp", .integer(state.expires)),
                    ("token_type", .string("Bearer")),
                ]))
        case let .registered(key):
            var fields: [(String, JSONValue)] = [("kid", .string(key.kid)), ("status", .string(key.status.rawValue))]
            if let keys = key.grantKeys { fields.append(("grant_keys", keys)) }
            return HTTPResponse(status: key.new ? 201 : 200, json: .object(fields))
        case .revoked:
            return HTTPResponse(status: 204, json: nil)
        case let .keyStatus(key):
            return HTTPResponse(
                status: 200,
                json: .object([
                    ("kid", .string(key.kid)), ("user", .string(key.user)), ("host", .string(key.host)),
                    ("status", .string(key.status.rawValue)), ("created", .integer(key.created)),
                    ("kind", .string(key.kind.rawValue)), ("ek", key.ek.map(JSONValue.string) ?? .null),
                ]))
        case let .challengeIssued(challenge):
            return HTTPResponse(
                status: 200,
                json: .object([
                    ("challenge", .string(challenge.id)),
                    ("credential_blob", .string(Base64URL.encode(challenge.credentialBlob))),
                    ("encrypted_secret", .string(Base64URL.encode(challenge.encryptedSecret))),
                    ("nonce", .string(Base64URL.encode(challenge.nonce))),
                    ("expires_in", .number(String(challenge.lifetime))),
                ]))
        case let .policyAllows(rule):
            return HTTPResponse(
                status: 200, json: .object([("allowed", .bool(true)), ("rule", rule.map(JSONValue.integer) ?? .null)]))
        case let .offlineSynced(report):
            return HTTPResponse(status: 200, json: offlineSync(report))
        case let .malformed(malformation):
            return malformed(malformation)
        case .unverifiedToken:
            return oauth ? error(400, "invalid_grant") : error(401, "invalid_token")
        case let .tokenRefused(reason):
            guard oauth else { return error(401, reason.rawValue) }
            return HTTPResponse(
                status: 400,
                json: .object([("error", .string("invalid_grant")), ("error_description", .string(reason.rawValue))]))
        case let .proofRefused(reason):
            return error(401, reason.text)
        case .badCredential(.hostToken):
            return error(401, "bad_host_token", headers: [("WWW-Authenticate", "Bearer realm=\"fingerauthd\"")])
        case .badCredential(.metricsToken):
            return error(401, "unauthorized", headers: [("WWW-Authenticate", "Bearer realm=\"fingerauthd metrics\"")])
        case let .forbidden(reason):
            return error(403, reason.text)
        case let .policyDenied(rule):
            var fields: [(String, JSONValue)] = [("error", .string("policy_denied"))]
            if let rule { fields.append(("rule", .integer(rule))) }
            return HTTPResponse(status: 403, json: .object(fields))
        case let .conflict(reason):
            return error(409, reason.text)
        case .unknownKey:
            return error(404, "unknown_kid")
        case .notOffered:
            return notFound
        case let .tooMany(wait):
            return tooMany(wait)
        case .tooManyChallenges:
            return error(429, "too_many_challenges")
        case .unavailable:
            return error(503, oauth ? "temporarily_unavailable" : "unavailable")
        case .approvalOpened, .approvalState, .approvalsWatched, .approvalDecided, .approvalRefused:
            return error(500, "internal")
        case let .hostKeyRegistered(key, new):
            return hostKeyRegistered(key, new: new)
        }
    }

    private static func malformed(_ malformation: Malformation) -> HTTPResponse {
        switch malformation {
        case .bodyTooLarge: return error(413, "body_too_large")
        case .mediaType: return error(415, "unsupported_media_type")
        case .json: return error(400, "invalid_json")
        case .request: return error(400, "invalid_request")
        case .jwk: return error(400, "invalid_jwk")
        case .attestation: return error(400, "invalid_attestation")
        case .grantType: return error(400, "unsupported_grant_type")
        case let .userName(name, field):
            // RFC 6749 §5.2's `error_description`, on every endpoint.
            let problem = UserName.problem(name) ?? "not a user name"
            return HTTPResponse(
                status: 400,
                json: .object([
                    ("error", .string("invalid_request")),
                    ("error_description", .string("\(field) is not a valid user name: \(problem) (\(UserName.rule))")),
                ]))
        }
    }

    /// `{"grants":{gid:"live"|"withdrawn"},"held":{kid:[seq…]},"rejected":{kid:[seq…]},
    /// "grant_keys":[…]}`, key ids in order.
    private static func offlineSync(_ report: OfflineSyncReport) -> JSONValue {
        func named(_ seqs: [String: [Int64]]) -> JSONValue {
            .object(seqs.sorted { $0.key < $1.key }.map { ($0.key, .array($0.value.map(JSONValue.integer))) })
        }
        var fields: [(String, JSONValue)] = [
            ("grants", .object(report.grants.map { ($0.gid, .string($0.state.rawValue)) })),
            ("held", named(report.held)), ("rejected", named(report.rejected)),
        ]
        if let keys = report.grantKeys { fields.append(("grant_keys", keys)) }
        return .object(fields)
    }

    /// 404 `not_found`: no such endpoint, or one not offered here.
    package static let notFound = error(404, "not_found")

    /// 405 with the methods the path allows.
    package static func notAllowed(_ allow: String) -> HTTPResponse {
        error(405, "method_not_allowed", headers: [("Allow", allow)])
    }

    /// 429 `rate_limited` with `Retry-After`.
    static func tooMany(_ wait: Int64) -> HTTPResponse {
        error(429, "rate_limited", headers: [("Retry-After", String(wait))])
    }

    static func error(_ status: Int, _ code: String, headers: [(String, String)] = []) -> HTTPResponse {
        .error(status, code, headers: headers)
    }
}
