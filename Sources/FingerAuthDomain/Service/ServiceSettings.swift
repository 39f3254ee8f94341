import FingerAuthCore
import FingerAuthKeyFormats

/// How new keys become usable.
package enum Approval: String, Sendable {
    /// A key registered with a valid host token and proof is active at once.
    case automatic
    /// New keys stay `pending` until `fingerauthd keys approve --kid KID`.
    case manual
}

/// Everything the service decides besides token verification (`VerifierPolicy`).
package struct ServiceSettings: Sendable {
    package var approval: Approval
    /// Lifetime of an access token issued by /oauth2/token, seconds.
    package var accessTokenTTL: Int64
    /// Refused requests per verified user and client address before its requests are refused (a token whose
    /// signature verified with the user's key, refused for a reason such as a replay).
    package var userLimit: RateLimit
    /// Refused requests per client address before its requests are refused.
    package var addressLimit: RateLimit
    /// When set, the metrics need this credential (`Credential.metricsToken`). Secret: never logged.
    package var metricsToken: String?
    /// TPM key attestation against the CAs that endorsement-key certificates must chain to
    /// (`tpm-ek-ca`: `TPMKeyAttestation`); without it TPM key attestation is refused
    /// (`attestation_not_configured`).
    package var attestation: (any KeyAttestation)?
    /// `require-hardware-keys`: registration and login of keys that are not attested TPM
    /// keys are refused (`hardware_key_required`) — a floor the policy cannot lower.
    package var requireHardwareKeys: Bool = false
    /// `max-keys-per-user-host`: active or pending keys one user may hold on one host; a
    /// registration past it is refused (`too_many_keys`). 0: no limit.
    package var maxKeysPerUserHost: Int = 10
    /// `host-registrations`: successful registrations (new keys, and the same key again) per
    /// host and window before they are refused; `failures` 0 turns it off.
    package var hostRegistrations = RateLimit(failures: 30, window: 300)
    /// `grant-key`: the key that signs offline grants; without it no grant is issued (the
    /// policy's `offline` rules then have no effect).
    package var grantSigner: (any GrantSigner)?
    /// Offline uploads (`/v1/offline-sync` requests that carry records, whatever became of
    /// them) per device key and window before they are refused; an address may make `addressFactor`
    /// times as many (a site's hosts behind one address). `failures` 0 turns it off.
    package var offlineUploads = RateLimit(failures: 10, window: 300)
    /// Remote approvals: their limits and waits.
    package var approvals = ApprovalSettings()

    package init(
        approval: Approval = .automatic, accessTokenTTL: Int64 = 300,
        userLimit: RateLimit = RateLimit(failures: 10, window: 300),
        addressLimit: RateLimit = RateLimit(failures: 50, window: 300),
        metricsToken: String? = nil
    ) {
        self.approval = approval
        self.accessTokenTTL = accessTokenTTL
        self.userLimit = userLimit
        self.addressLimit = addressLimit
        self.metricsToken = metricsToken
    }
}
