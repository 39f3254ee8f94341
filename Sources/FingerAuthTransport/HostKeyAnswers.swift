import FingerAuthDomain
import FingerAuthWeb

/// How `POST /v1/hosts/keys` says its outcomes: as a device key's registration, but for a
/// refused proof (400 with the `proof_` reason: the request is wrong, not its credential,
/// which is the host token) and its own body.
extension AnswerMapping {
    /// The answer where the host-key endpoint says an outcome otherwise than the others do.
    static func hostKeyAnswer(_ outcome: Outcome) -> HTTPResponse? {
        switch outcome {
        case let .proofRefused(reason): return error(400, reason.text)
        default: return nil
        }
    }

    /// 201 `{"kid", "status", "host"}` for a new host key, 200 for the same key again.
    static func hostKeyRegistered(_ key: RegisteredHostKey, new: Bool) -> HTTPResponse {
        HTTPResponse(
            status: new ? 201 : 200,
            json: .object([
                ("kid", .string(key.kid)), ("status", .string(key.status.rawValue)), ("host", .string(key.host)),
            ]))
    }
}
