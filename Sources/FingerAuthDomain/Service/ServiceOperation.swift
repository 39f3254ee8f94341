/// What a client asks of the service. The transport finds it from the request's method and
/// path (`LoginAPI`, FingerAuthTransport); the service never sees either.
package enum ServiceOperation: Sendable, Equatable {
    /// The store's health.
    case health
    /// The counters for monitoring.
    case metrics
    /// A login with a signed login token.
    case login
    /// The OAuth JWT-bearer grant (RFC 7523).
    case accessToken
    /// OAuth token introspection (RFC 7662), with a host token.
    case introspect
    /// A key's registration, with a host token and a proof.
    case register
    /// A TPM attestation challenge, with a host token.
    case attestationChallenge
    /// What the policy says about a user on the host of the host token.
    case policyCheck
    /// A host's offline grants and offline login records.
    case offlineSync
    /// The revocation of key `kid`, by its host or by the key itself.
    case revoke(kid: String)
    /// The status of key `kid`, for its host.
    case keyStatus(kid: String)
    /// A host's request for a remote approval, signed by its host key.
    case requestApproval
    /// Where approval `id` stands, for the host that asked (a long poll).
    case approvalState(id: String)
    /// The host that asked withdraws approval `id`.
    case withdrawApproval(id: String)
    /// A workstation's watch for its user's pending approvals (a long poll).
    case watchApprovals
    /// A person's decision on approval `id`, signed by their device key.
    case decideApproval(id: String)
    /// A host key's registration, with the host's token and a proof signed by the host key.
    case registerHostKey
}

/// What the service reads of a request: who sent it, the credential it carries and its body.
package struct ServiceRequest: Sendable {
    /// The client's address as every limit, the audit row and the log line count it: the
    /// transport resolves it (`ClientAddress`: the TCP peer, or behind a trusted proxy the
    /// client that proxy names; an IPv6 client by its /64).
    package var peer: String
    /// The bearer credential (a host token, a key holder's token, the metrics token), if
    /// any. Secret: never logged.
    package var credential: String?
    /// How the body is encoded, as its sender declared it.
    package var media: BodyMedia
    package var body: [UInt8]
    /// True when the body went past the cap and was discarded.
    package var bodyTooLarge: Bool
    /// The query's parameters the operation reads (a long poll's `wait`, a watch's `have`).
    package var query: [String: String] = [:]

    package init(
        peer: String = "-", credential: String? = nil, media: BodyMedia = .other, body: [UInt8] = [],
        bodyTooLarge: Bool = false
    ) {
        self.peer = peer
        self.credential = credential
        self.media = media
        self.body = body
        self.bodyTooLarge = bodyTooLarge
    }
}

/// A body's declared encoding.
package enum BodyMedia: Sendable, Equatable {
    /// JSON.
    case json
    /// Form fields (`name=value&…`, `FormBody`).
    case form
    /// Anything else, or nothing declared.
    case other
}
