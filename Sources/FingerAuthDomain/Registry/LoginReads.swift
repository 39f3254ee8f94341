import FingerAuthCore

/// What a login reads before its one write, fetched together in one statement — one round
/// trip to a remote database — before its token is verified, keyed by what the token claims
/// (`sub`, `iss`): the policy's facts for that user and host, and the open failure windows of
/// the limits the store shares between instances (the address, the user at that address).
///
/// Nothing in it is trusted for being claimed: the policy facts are used only when the
/// verified identity is the claimed one (else they are read again for the verified one),
/// and a failure window is a count the request would have read anyway.
package struct LoginReads: Sendable, Equatable {
    /// The user and host the policy facts are for.
    package var user: String
    package var host: String
    package var policy: PolicySnapshot
    /// The shared keys asked for (`FailureLimiter.sharedKey`), and the open window of each
    /// that has one.
    package var keys: [String]
    package var windows: [String: FailureWindow]

    package init(user: String, host: String, policy: PolicySnapshot, keys: [String], windows: [String: FailureWindow]) {
        self.user = user
        self.host = host
        self.policy = policy
        self.keys = keys
        self.windows = windows
    }

    /// The policy facts when they are for `user` and `host`, byte for byte.
    package func policy(user: String, host: String) -> PolicySnapshot? {
        self.user.sameBytes(as: user) && self.host.sameBytes(as: host) ? policy : nil
    }
}
