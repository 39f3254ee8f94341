import FingerAuthCore

/// A host key's registration (`ServiceOperation.registerHostKey`, `POST /v1/hosts/keys`):
/// the host's own key, that later signs its approval requests. Registered like a device key
/// (`register`), with the host's enrollment token and a proof signed by the new key (`typ`
/// fingerauth-host-proof+jwt, `sub` = `iss` = the host), but for no user: there is no
/// policy stage for it, and a host key never logs in (it is not in the keys the verifier
/// looks logins up in).
extension AuthenticatorService {
    /// Registers a host key: host token (`badCredential`), the host's registrations in this
    /// window (`tooMany`, the counter device keys use), body (`malformed`), token's host =
    /// body host (`forbidden`), an RSA key of 2048+ bits (`malformed`), a proof signed by that
    /// key (`proofRefused`), then the registry (`hostKeyRegistered`, new or the same key
    /// again — nothing written —, `conflict` another host's or a device key's kid, or
    /// revoked, `proofRefused` proof replayed). A new key revokes the host's previous one.
    func registerHostKey(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .hostKeyRegister, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        let (answer, written) = hostKeyAnswer(request, &event, exchange)
        return registrationStep(event, answer, exchange, written: written)
    }

    private func hostKeyAnswer(
        _ request: ServiceRequest, _ event: inout AuditEvent, _ exchange: Exchange
    ) -> (Outcome, Bool) {
        let tokenHost: String
        let body: JSONValue
        switch registrationStart(request, &event, exchange) {
        case let .failure(refusal): return (refusal.outcome, false)
        case let .success(start): (tokenHost, body) = start
        }
        guard let host = body["host"]?.stringValue, Names.isValidHost(host), let jwkJSON = body["jwk"],
            let proof = body["proof"]?.stringValue
        else {
            event.reason = .code(.invalidRequest)
            return (.malformed(.request), false)
        }
        event.host = host
        guard host.sameBytes(as: tokenHost) else {
            event.reason = .code(.hostMismatch)
            return (.forbidden(.code(.hostMismatch)), false)
        }
        guard let (jwk, kid) = newKey(jwkJSON, &event) else { return (.malformed(.jwk), false) }
        let token: VerifiedToken
        switch checkedProof(proof, for: .hostProof(jwk: jwk, kid: kid, host: host), &event) {
        case let .failure(refusal): return (refusal.outcome, false)
        case let .success(verified): token = verified
        }
        // A TPM key comes with its attestation, challenged for the host itself (no user).
        var kind = KeyOrigin.software
        var ek: String?
        if let attestation = body["attestation"] {
            switch attestationCheck(attestation, user: "", host: host, jwk: jwk) {
            case let .refused(answer, reason):
                event.reason = reason
                if answer == .unavailable { event.outcome = .error }
                return (answer, false)
            case let .attested(attestedEK):
                kind = .attestedTPM
                ek = attestedEK
            }
        }
        let key = RegisteredHostKey(
            kid: kid, host: host, jwk: jwk, status: .active, created: clock.now(), kind: kind, ek: ek)
        let result: HostKeyRegistration
        do {
            result = try store.registerHostKey(
                key, proofJTI: token.jti, keepUntil: token.keepUntil, audit: event, now: clock.now())
        } catch {
            log.message("host key register failed: \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return (.unavailable, false)
        }
        event = result.audit(event)
        switch result {
        case .created: return (.hostKeyRegistered(key, new: true), true)
        case .alreadyRegistered:
            let current = (try? store.hostKey(kid: kid)) ?? nil
            return (.hostKeyRegistered(current ?? key, new: false), true)
        case .conflict: return (.conflict(.code(.kidConflict)), true)
        case .revoked: return (.conflict(.token(.keyRevoked)), true)
        case .proofReplayed: return (.proofRefused(.proof(.replayed)), true)
        case .ekMismatch: return (.forbidden(.code(.ekMismatch)), true)
        }
    }
}
