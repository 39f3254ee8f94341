/// Which audit rows a console page shows: every filter optional, newest first, before `beforeID`.
package struct ConsoleAuditQuery: Sendable, Equatable {
    package var user: String?
    package var host: String?
    package var event: String?
    package var outcome: String?
    /// Rows at or after this time (seconds since the epoch)…
    package var since: Int64?
    /// …and before this one.
    package var until: Int64?
    /// Rows with an id below this one (the next page); nil for the newest.
    package var beforeID: Int64?
    package var limit: Int

    package init(
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
