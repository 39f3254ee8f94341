import FingerAuthCore
import FingerAuthKeyFormats

/// TPM key attestation at registration, in two requests.
///
/// 1. The challenge (`ServiceOperation.attestationChallenge`, host token) with `{user, host, ek_certificate,
///    ak_public}`: the EK certificate must chain to `tpm-ek-ca`, the AK must be a
///    restricted signing key bound to its TPM. The answer wraps a fresh secret for that EK
///    and that AK's Name (TPM2_MakeCredential) and names a fresh nonce:
///    `{challenge, credential_blob, encrypted_secret, nonce, expires_in}`.
/// 2. The registration with the usual body plus `attestation: {challenge, credential,
///    key_public, certify_info, certify_signature}`: the secret the TPM unwrapped (so the AK
///    is in the EK's TPM), the device key's TPM2B_PUBLIC, and TPM2_Certify of that key by
///    the AK over the nonce. The key is then stored as `attested-tpm`.
///
/// Every binary member is base64url without padding. Refusals are `malformed(.attestation)`
/// (does not parse) or `forbidden` with the reason, which is also the audit row's.
///
/// The EK is named by `EndorsementKeyID` (SHA-256 of its public key). A host whose pin
/// (`EKPins`) names another EK is refused at the challenge already (`ek_mismatch`); a
/// host without one gets it pinned by the registration that completes the attestation, in
/// the registration's transaction (`Registration`): only an EK whose TPM answered the
/// challenge is ever pinned, never one that was merely shown.
extension AuthenticatorService {
    func attestationChallenge(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        var event = AuditEvent(
            event: .attestChallenge, outcome: .deny, peer: LogText.clean(exchange.address), verified: false)
        let answer = challengeAnswer(request, &event)
        // Only refusals are audited: a challenge changes nothing until it is answered.
        if case .challengeIssued = answer { return .outcome(answer) }
        return finish(event, answer, exchange)
    }

    private func challengeAnswer(_ request: ServiceRequest, _ event: inout AuditEvent) -> Outcome {
        let tokenHost: String
        switch authorizedHost(request, &event) {
        case let .refused(answer): return answer
        case let .host(host): tokenHost = host
        }
        let body: JSONValue
        switch Self.jsonBody(request) {
        case let .failure(failure):
            event.reason = failure.code
            return failure.outcome
        case let .success(value):
            body = value
        }
        if let named = body["user"]?.stringValue, !Names.isValidUser(named) {
            event.claimedUser = LogText.clean(named, limit: 64)
            event.reason = .token(.invalidUserName)
            return .malformed(.userName(named, field: "user"))
        }
        // A host key's challenge names no user (`"purpose": "host"`); its registration
        // answers it with no user either (`registerHostKey`).
        let forHost = body["purpose"]?.stringValue == "host"
        guard let user = forHost ? (body["user"] == nil ? "" : nil) : body["user"]?.stringValue,
            forHost || Names.isValidUser(user), body["purpose"] == nil || forHost,
            let host = body["host"]?.stringValue, Names.isValidHost(host)
        else {
            event.reason = .code(.invalidRequest)
            return .malformed(.request)
        }
        event.user = forHost ? nil : user
        event.host = host
        guard host.sameBytes(as: tokenHost) else {
            event.reason = .code(.hostMismatch)
            return .forbidden(.code(.hostMismatch))
        }
        guard let attestation = settings.attestation else {
            event.reason = .code(.attestationNotConfigured)
            return .forbidden(.code(.attestationNotConfigured))
        }
        guard let der = body["ek_certificate"]?.stringValue.flatMap(Base64URL.decode),
            let ak = body["ak_public"]?.stringValue.flatMap(Base64URL.decode)
        else {
            event.reason = .code(.invalidAttestation)
            return .malformed(.attestation)
        }
        let certificate: any EndorsementCertificate
        switch attestation.endorsement(der) {
        case .malformed:
            event.reason = .code(.invalidAttestation)
            return .malformed(.attestation)
        case let .untrusted(why):
            if let why { log.message("EK certificate of \(LogText.clean(host)) refused: \(LogText.clean(why))") }
            event.reason = .code(.ekUntrusted)
            return .forbidden(.code(.ekUntrusted))
        case .unnamed:
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .unavailable
        case let .trusted(trusted):
            certificate = trusted
        }
        let ek = certificate.keyID
        do {
            if let pin = try store.ekPin(host: host), pin.ek != ek {
                log.message(
                    "attestation challenge for \(forHost ? "the host key" : LogText.clean(user)) on \(LogText.clean(host)) refused: EK \(ek) "
                        + "is not the host's pinned EK \(pin.ek) (\(pin.source.rawValue))")
                event.reason = .code(.ekMismatch)
                return .forbidden(.code(.ekMismatch))
            }
        } catch {
            log.message("cannot read the EK pin of \(LogText.clean(host)): \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .unavailable
        }
        let attestationKey: TPMPublicKey
        do {
            attestationKey = try TPMPublicKey(tpm2b: ak)
        } catch {
            event.reason = .attestation(.akInvalid)
            return .forbidden(.attestation(.akInvalid))
        }
        guard let name = crypto.attestationKeyName(attestationKey) else {
            event.reason = .attestation(.akInvalid)
            return .forbidden(.attestation(.akInvalid))
        }
        guard let secret = crypto.bytes(32), let nonce = crypto.bytes(32), let idBytes = crypto.bytes(18),
            let digest = crypto.sha256(secret),
            let made = attestation.makeCredential(certificate, name: name, secret: secret)
        else {
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .unavailable
        }
        let id = Base64URL.encode(idBytes)
        let now = clock.now()
        let stored = StoredChallenge(
            id: id, user: user, host: host, attestationKey: ak, secretDigest: digest,
            nonce: nonce, expires: now + AttestationChallenges.lifetime, ek: ek)
        let admission: ChallengeAdmission
        do {
            admission = try store.addChallenge(
                stored, perHost: AttestationChallenges.perHost,
                capacity: AttestationChallenges.capacity, now: now)
        } catch {
            log.message("cannot store an attestation challenge: \(error)")
            event.outcome = .error
            event.reason = .token(.unavailable)
            return .unavailable
        }
        switch admission {
        case .admitted: break
        case .hostFull, .full:
            event.reason = .code(.tooManyChallenges)
            return .tooManyChallenges
        }
        return .challengeIssued(
            IssuedChallenge(
                id: id, credentialBlob: made.credentialBlob, encryptedSecret: made.encryptedSecret, nonce: nonce,
                lifetime: AttestationChallenges.lifetime))
    }

    /// How a registration's attestation ended.
    enum AttestationCheck {
        /// The key is an attested TPM key of the TPM holding this EK (`EndorsementKeyID`).
        case attested(ek: String)
        /// The outcome and the reason to audit.
        case refused(Outcome, AuditReason)
    }

    /// A registration's `attestation` member checked against its challenge: attested when
    /// the key is shown to be a TPM key of `user` on `host` in the TPM of the challenge's EK.
    func attestationCheck(_ attestation: JSONValue, user: String, host: String, jwk: JWK) -> AttestationCheck {
        guard let id = attestation["challenge"]?.stringValue, id.utf8.count <= 64,
            let credential = attestation["credential"]?.stringValue.flatMap(Base64URL.decode),
            let keyBytes = attestation["key_public"]?.stringValue.flatMap(Base64URL.decode),
            let attest = attestation["certify_info"]?.stringValue.flatMap(Base64URL.decode),
            let signature = attestation["certify_signature"]?.stringValue.flatMap(Base64URL.decode)
        else {
            return .refused(.malformed(.attestation), .code(.invalidAttestation))
        }
        let pending: StoredChallenge?
        do {
            pending = try store.takeChallenge(id: id, now: clock.now())
        } catch {
            log.message("cannot read an attestation challenge: \(error)")
            return .refused(.unavailable, .token(.unavailable))
        }
        guard let pending, pending.user.sameBytes(as: user), pending.host.sameBytes(as: host),
            let attestationKey = try? TPMPublicKey(tpm2b: pending.attestationKey)
        else { return .refused(.forbidden(.code(.challengeUnknown)), .code(.challengeUnknown)) }
        guard let digest = crypto.sha256(credential), ConstantTime.equal(digest, pending.secretDigest) else {
            return .refused(.forbidden(.code(.activationFailed)), .code(.activationFailed))
        }
        guard let key = try? TPMPublicKey(tpm2b: keyBytes) else {
            return .refused(.forbidden(.attestation(.keyMismatch)), .attestation(.keyMismatch))
        }
        if let refusal = crypto.certificationRefusal(
            key: key, jwk: jwk, attest: attest, signature: signature,
            ak: attestationKey, nonce: pending.nonce)
        {
            return .refused(.forbidden(.attestation(refusal)), .attestation(refusal))
        }
        return .attested(ek: pending.ek)
    }
}
