/// A failure the user can act on: exit status 1 and a message saying what to do.
struct CommandError: Error {
    let message: String
    let status: Int32
    /// The authenticator could not be reached (connection, TLS, timeout): commands that
    /// can go on without it (`reset`) warn instead of failing.
    let unreachable: Bool
    init(_ message: String, status: Int32 = 1, unreachable: Bool = false) {
        self.message = message
        self.status = status
        self.unreachable = unreachable
    }
}
