/// How remote approvals are bounded (fingerauthd's `approval-*` settings).
package struct ApprovalSettings: Sendable {
    /// After a denial ("Not me"), the user's new requests are refused this long, seconds.
    package var muteSeconds: Int64 = 1200
    /// The longest a long poll is parked, seconds: below any proxy's idle limit.
    package var maxWait: Int64 = 25
    /// Requests a host may make per window (refused past it: 429).
    package var hostRequests = RateLimit(failures: 30, window: 60)
    /// Requests per client address and window (a site's hosts behind one address).
    package var addressRequests = RateLimit(failures: 120, window: 60)
    /// A refusal of the same kind for the same user is audited once per this window, seconds.
    package var refusalAuditWindow: Int64 = 60

    package init() {}
}
