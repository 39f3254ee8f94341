/// Where a user's state lives under `state_dir` (pam_fingerauth(8), FILES). The user name must
/// already be valid (`UserName.isValid`): it becomes a path component.
package struct StatePaths: Sendable {
    package let root: String
    package let user: String

    package init(root: String, user: String) {
        self.root = root
        self.user = user
    }

    /// `<state_dir>/users`
    package var usersDirectory: String { root + "/users" }
    /// `<state_dir>/users/<user>` — root, 0700.
    package var userDirectory: String { usersDirectory + "/" + user }
    /// `…/prints` — root, 0700.
    package var printsDirectory: String { userDirectory + "/prints" }
    /// `…/prints/<finger>.fpt` — root, 0600.
    package func printFile(finger: String) -> String { printsDirectory + "/" + finger + ".fpt" }
    /// `…/device.key` — RSA PKCS#8 PEM, root, 0600.
    package var deviceKey: String { userDirectory + "/device.key" }
    /// `…/registration` — kid, authenticator, time; root, 0600.
    package var registration: String { userDirectory + "/registration" }
    /// `…/offline-grant` — the offline grant and the clocks when it came (`GrantReceipt`); root, 0600.
    package var offlineGrant: String { userDirectory + "/offline-grant" }
    /// `…/offline-log` — the offline logins, one signed record a line (`OfflineRecord`); root, 0600.
    package var offlineLog: String { userDirectory + "/offline-log" }
    /// `…/offline-sent` — the last record's `seq` the authenticator holds; root, 0600.
    package var offlineSent: String { userDirectory + "/offline-sent" }
    /// `<state_dir>/grant-keys` — the authenticator's grant keys this host pins; root, 0644.
    package var grantKeys: String { root + "/grant-keys" }
    /// `<state_dir>/clock-floor` — the latest wall-clock time this host saw at an online answer,
    /// a sync or an offline login (`ClockFloor`); root, 0600.
    package var clockFloor: String { root + "/clock-floor" }

    package static let printSuffix = ".fpt"

    /// `<state_dir>/host/host.key` — this host's own key (`fingerauth host register`), which
    /// signs its remote approval requests; root, 0600.
    package static func hostKey(root: String) -> String { root + "/host/host.key" }
}
