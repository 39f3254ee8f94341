import FingerAuthCore

/// What one instance of a fleet tells the others when an approval changed (PostgreSQL's
/// `NOTIFY fingerauth_approvals`, sent inside the change's transaction, so delivered only
/// when it commits): the approval's id and its user, as `"ID USER"`. Both are safe words —
/// the id is base64url, the user a valid user name (at most 32 bytes) — so the payload is
/// at most 22 + 1 + 32 bytes, far below PostgreSQL's limit of 8000. It carries no state:
/// whoever is woken reads the approval's row, the one truth.
package struct ApprovalNotice: Equatable, Sendable {
    /// The channel every instance listens on and notifies.
    package static let channel = "fingerauth_approvals"
    /// The longest id a payload may carry (the service makes 22 characters).
    static let idLimit = 64

    package let id: String
    package let user: String

    package init(id: String, user: String) {
        self.id = id
        self.user = user
    }

    /// `"ID USER"`, what the notification carries.
    package var payload: String { id + " " + user }

    /// The notice a payload carries; nil for anything else (a payload we did not send is
    /// ignored, never trusted: it could at most wake polls, which then read the truth).
    package init?(payload: String) {
        guard payload.utf8.count <= Self.idLimit + 1 + 32 else { return nil }
        let parts = payload.utf8.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let id = String(decoding: parts[0], as: UTF8.self)
        let user = String(decoding: parts[1], as: UTF8.self)
        guard (1...Self.idLimit).contains(id.utf8.count), id.utf8.allSatisfy(Base64URL.isAlphabet),
            Names.isValidUser(user)
        else { return nil }
        self.id = id
        self.user = user
    }
}

/// The service's side of the notices (the port the PostgreSQL listener calls): wake the
/// long polls parked on this instance.
package protocol ApprovalWakeups: Sendable {
    /// Another instance (or this one) changed approval `notice.id` of `notice.user`.
    func approvalChanged(_ notice: ApprovalNotice)
    /// Notices may have been lost (the listener's connection was down): every parked poll
    /// reads the truth again.
    func anythingMayHaveChanged()
}
