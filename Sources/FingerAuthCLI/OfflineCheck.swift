import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthOffline

/// `fingerauth status`'s `offline` line: the user's offline grant as the login helper would
/// judge it now (its end, its uses left, its services), or why it could not be used, and the
/// offline logins not yet uploaded. Never blocking: without a grant the password remains.
enum OfflineCheck {
    static func run(_ context: Context, key: DeviceKey?) -> StatusCheck {
        let options = context.options
        let book = OfflineBook(
            stateDirectory: options.stateDirectory, user: context.user, host: Authenticator(options: options).hostID)
        let unsent = book.unsent().count
        let pending = unsent == 0 ? "" : "; \(unsent) offline login(s) not yet uploaded"
        let sync = "fingerauth sync (or log in once while the authenticator answers)"
        let receipt: GrantReceipt
        switch book.receipt() {
        case .success(nil):
            let detail = "no offline grant: without the authenticator the finger falls to the password" + pending
            return unsent == 0 ? .pass("offline", detail) : .warn("offline", detail, fix: sync)
        case let .failure(why): return .warn("offline", why.description + pending, fix: sync)
        case let .success(kept?): receipt = kept
        }
        guard let key else {
            return .warn("offline", "a grant is kept, but there is no device key" + pending, fix: sync)
        }
        let pins = GrantPins(stateDirectory: options.stateDirectory).keys()
        let checked = OfflineGrant.verified(
            receipt.token, keys: pins, check: OpenSSLGrantCheck(), user: context.user, host: book.host, kid: key.kid)
        guard case let .success(grant) = checked, let service = grant.services.first, let now = GrantClock.read() else {
            if case let .failure(why) = checked { return .warn("offline", why.description + pending, fix: sync) }
            return .warn("offline", "the clocks cannot be read" + pending, fix: sync)
        }
        switch book.usable(kid: key.kid, service: service, pins: pins, now: now) {
        case let .success((_, expires)):
            let used = book.records().filter { $0.record.gid.sameBytes(as: grant.gid) }.count
            return .pass(
                "offline",
                "grant until \(UTCTime.minutes(expires)), \(grant.uses - used) of \(grant.uses) offline logins left, "
                    + "for \(grant.services.joined(separator: ","))" + pending)
        case let .failure(why):
            return .warn("offline", why.description + pending, fix: sync)
        }
    }
}
