/// Which audit rows a console page shows: every filter optional, newest first, before `beforeID`.
public struct ConsoleAuditQuery: Sendable, Equatable {
    public var user: String?
    public var host: String?
    public var event: String?
    public var outcome: String?
    /// Rows at or after this time (seconds since the epoch)…
    public var since: Int64?
    /// …and before this one.
    public var until: Int64?
    /// Rows with an id below this one (the next page); nil for the newest.
    public var beforeID: Int64?
    public var limit: Int

    public init(
        user: String? = nil, host: String? = nil, event: String? = nil, outcome: String? = nil,
        since: Int64? = nil, until: Int64? = nil, beforeID: Int64? = nil, limit: Int = 50
    ) {
        self.user = user
        self.host = host
        self.event = event
        self.outcome = outcome
        self.since = since
        self.until = until
        self.beforeID = beforeID
        self.limit = limit
    }
}
