import FingerAuthCore
import FingerAuthDomain
import FingerAuthWeb

/// How the approvals' outcomes are said on the wire: an approval as its host and its
/// workstations read it, and its refusals.
extension AnswerMapping {
    /// The answer to one of the approvals' own outcomes; nil for any other outcome.
    static func approvalAnswer(_ outcome: Outcome) -> HTTPResponse? {
        switch outcome {
        case let .approvalOpened(record, now, workstations):
            return HTTPResponse(
                status: 201,
                json: .object([
                    ("id", .string(record.id)), ("code", .string(record.code)), ("expires", .integer(record.expires)),
                    ("server_time", .integer(now)), ("workstations", .array(workstations.map(JSONValue.string))),
                ]))
        case let .approvalState(record, now):
            var fields: [(String, JSONValue)] = [
                ("id", .string(record.id)), ("status", .string(record.status.rawValue)),
                ("code", .string(record.code)), ("expires", .integer(record.expires)), ("server_time", .integer(now)),
            ]
            if let workstation = record.workstation { fields.append(("workstation", .string(workstation))) }
            if let kid = record.decidedKid { fields.append(("kid", .string(kid))) }
            return HTTPResponse(status: 200, json: .object(fields))
        case let .approvalsWatched(records, now):
            return HTTPResponse(
                status: 200,
                json: .object([("approvals", .array(records.map(watched))), ("server_time", .integer(now))]))
        case let .approvalDecided(status):
            return HTTPResponse(status: 200, json: .object([("status", .string(status.rawValue))]))
        case let .approvalRefused(refusal):
            let code = refusal.code.rawValue
            switch refusal {
            case .pending, .notYours, .mismatch, .unknown:
                let status = refusal == .pending ? 409 : refusal == .unknown ? 404 : 403
                return error(status, code)
            case let .muted(wait):
                return error(429, code, headers: [("Retry-After", String(wait))])
            case let .closed(status):
                return HTTPResponse(
                    status: 409, json: .object([("error", .string(code)), ("status", .string(status.rawValue))]))
            }
        default:
            return nil
        }
    }

    /// One pending approval as a workstation shows it: who, where, what, from where, the code.
    private static func watched(_ record: ApprovalRecord) -> JSONValue {
        .object([
            ("id", .string(record.id)), ("code", .string(record.code)), ("user", .string(record.user)),
            ("host", .string(record.host)), ("service", .string(record.service)),
            ("rhost", .string(record.clientAddress)), ("tty", .string(record.terminal)),
            ("nonce", .string(record.nonce)), ("caller", .string(record.caller)),
            ("expires", .integer(record.expires)),
        ])
    }
}
