/// What the verifier enforces besides the signature.
package struct VerifierPolicy: Sendable {
    /// The `aud` this authenticator answers to.
    package var audience: String
    /// Largest accepted `exp - iat`, seconds (DESIGN: at most 300).
    package var maxTTL: Int64
    /// Clock difference tolerated on `exp`, `nbf` and `iat`, seconds.
    package var skew: Int64
    /// Largest accepted compact token, bytes.
    package var maxTokenBytes: Int
    /// Longest accepted `jti`, bytes.
    package var maxJTIBytes: Int

    package init(
        audience: String, maxTTL: Int64 = 300, skew: Int64 = 30,
        maxTokenBytes: Int = 8 * 1024, maxJTIBytes: Int = 128
    ) {
        self.audience = audience
        self.maxTTL = maxTTL
        self.skew = skew
        self.maxTokenBytes = maxTokenBytes
        self.maxJTIBytes = maxJTIBytes
    }
}
