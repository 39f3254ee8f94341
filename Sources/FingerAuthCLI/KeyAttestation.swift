import FingerAuthCore
import FingerAuthCrypto
import FingerAuthHTTP
import FingerAuthKeyFormats
import FingerAuthTPM

/// The host's side of registering a TPM key: `POST /v1/keys/challenge` with the EK
/// certificate and a fresh attestation key, the TPM's answer to the credential challenge,
/// and TPM2_Certify of the device key over the authenticator's nonce. The result is the
/// `attestation` member of `POST /v1/keys`; the authenticator checks all of it and records
/// the key as `attested-tpm`.
struct KeyAttestation {
    let authenticator: Authenticator
    let token: String
    /// Whose device key it is; nil for this host's own key (the challenge then says
    /// `"purpose": "host"`).
    let user: String?

    /// `…/v1/keys/challenge`.
    var challengeURL: String { authenticator.keysURL + "/challenge" }

    /// The `attestation` member for `key`; nil for a file key.
    func member(for key: DeviceKey) throws(CommandError) -> JSONValue? {
        guard case let .hardware(hardware) = key.backing else { return nil }
        guard let tpmKey = hardware as? TPMDeviceKey else { throw CommandError("this hardware key cannot be attested") }
        let attestor = TPMAttestor(connection: tpmKey.connection)
        defer { attestor.close() }
        let certificate: [UInt8]
        let akPublic: [UInt8]
        do {
            certificate = try attestor.endorsementCertificate()
            akPublic = try attestor.attestationKey()
        } catch {
            throw CommandError("cannot prepare the TPM attestation: \(error.description); \(error.advice)")
        }
        let whose: (String, JSONValue) = user.map { ("user", .string($0)) } ?? ("purpose", .string("host"))
        let request = JSONEncoding.encodeBytes(
            .object([
                whose, ("host", .string(authenticator.hostID)),
                ("ek_certificate", .string(Base64URL.encode(certificate))),
                ("ak_public", .string(Base64URL.encode(akPublic))),
            ]))
        let challenge = try ask(request)
        do {
            let credential = try attestor.activate(
                credentialBlob: challenge.credentialBlob,
                encryptedSecret: challenge.encryptedSecret)
            let certified = try attestor.certify(tpmKey, nonce: challenge.nonce)
            return .object([
                ("challenge", .string(challenge.id)),
                ("credential", .string(Base64URL.encode(credential))),
                ("key_public", .string(Base64URL.encode(tpmKey.file.publicArea))),
                ("certify_info", .string(Base64URL.encode(certified.attest))),
                ("certify_signature", .string(Base64URL.encode(certified.signature))),
            ])
        } catch {
            throw CommandError(
                "the TPM could not answer the authenticator's challenge: \(error.description); \(error.advice)")
        }
    }

    /// What to do when the authenticator has another TPM's EK pinned for this host.
    static func ekMismatch(host: String) -> String {
        "the authenticator has another TPM's endorsement key pinned for \(host): it registers keys of that TPM only. "
            + "If this is the host's own TPM, give its admin this TPM's EK (fingerauth key ek) to check against "
            + "'fingerauthd hosts list' and pin it: fingerauthd hosts add-ek \(host) HASH"
    }

    struct Challenge {
        let id: String
        let credentialBlob: [UInt8]
        let encryptedSecret: [UInt8]
        let nonce: [UInt8]
    }

    private func ask(_ body: [UInt8]) throws(CommandError) -> Challenge {
        switch authenticator.send("POST", challengeURL, body: body, token: token) {
        case let .failure(failure):
            throw CommandError("\(failure.message) (url \(challengeURL))", unreachable: true)
        case let .success(response):
            let json = try? JSONParser().parse(response.body)
            guard response.status == 200 else {
                let reason = Authenticator.reason(response)
                switch reason {
                case "attestation_not_configured":
                    let fileKey =
                        user.map { "fingerauth key create --store file --force --user \($0)" }
                        ?? "remove the host key, then fingerauth host register --store file"
                    throw CommandError(
                        "the authenticator does not check TPM attestation (its admin starts fingerauthd with --tpm-ek-ca), "
                            + "so it cannot accept a TPM key; or use a file key: \(fileKey)")
                case "ek_untrusted":
                    throw CommandError(
                        "the authenticator does not trust this TPM's EK certificate (not issued by a CA in its --tpm-ek-ca)"
                    )
                case "ek_mismatch":
                    throw CommandError(Self.ekMismatch(host: authenticator.hostID))
                default:
                    throw CommandError(
                        "the authenticator refused the TPM attestation challenge (\(response.status)): \(reason)")
                }
            }
            guard let json, let id = json["challenge"]?.stringValue,
                let blob = json["credential_blob"]?.stringValue.flatMap(Base64URL.decode),
                let secret = json["encrypted_secret"]?.stringValue.flatMap(Base64URL.decode),
                let nonce = json["nonce"]?.stringValue.flatMap(Base64URL.decode)
            else {
                throw CommandError("the authenticator's attestation challenge does not parse")
            }
            return Challenge(id: id, credentialBlob: blob, encryptedSecret: secret, nonce: nonce)
        }
    }
}
