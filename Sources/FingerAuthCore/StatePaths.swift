/// Where a user's state lives under `state_dir` (pam_fingerauth(8), FILES). The user name must
/// already be valid (`UserName.isValid`): it becomes a path component.
public struct StatePaths: Sendable {
    public let root: String
    public let user: String

    public init(root: String, user: String) {
        self.root = root
        self.user = user
    }

    /// `<state_dir>/users`
    public var usersDirectory: String { root + "/users" }
    /// `<state_dir>/users/<user>` — root, 0700.
    public var userDirectory: String { usersDirectory + "/" + user }
    /// `…/prints` — root, 0700.
    public var printsDirectory: String { userDirectory + "/prints" }
    /// `…/prints/<finger>.fpt` — root, 0600.
    public func printFile(finger: String) -> String { printsDirectory + "/" + finger + ".fpt" }
    /// `…/device.key` — RSA PKCS#8 PEM, root, 0600.
    public var deviceKey: String { userDirectory + "/device.key" }
    /// `…/registration` — kid, authenticator, time; root, 0600.
    public var registration: String { userDirectory + "/registration" }

    public static let printSuffix = ".fpt"
}
