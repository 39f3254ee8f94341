import FingerAuthCore
import FingerAuthStore

/// The credential-activation challenges this instance has handed out and not yet seen
/// answered: what `POST /v1/keys/challenge` made, waiting for the `POST /v1/keys` that
/// proves the TPM unwrapped it. Each is used once (taken, answered right or wrong), lives
/// `lifetime` seconds, and a host may hold only `perHost` at a time, the instance
/// `capacity`: a host token cannot fill the server's memory.
///
/// They live in this process: the registration must reach the instance that made the
/// challenge (one instance, or a load balancer that keeps a host on one instance).
final class AttestationChallenges: @unchecked Sendable {
    /// What the server remembers of one challenge. The secret and nonce are compared with
    /// the host's answer; nothing of them is logged.
    struct Pending {
        let user: String
        let host: String
        let attestationKey: TPMPublicKey
        let secret: [UInt8]
        let nonce: [UInt8]
        let expires: Int64
    }

    enum Admission: Equatable {
        case admitted
        /// This host already holds `perHost` open challenges.
        case hostFull
        /// The instance holds `capacity` open challenges.
        case full
    }

    static let lifetime: Int64 = 120
    let perHost: Int
    let capacity: Int
    private let lock = Lock()
    private var pending: [String: Pending] = [:]

    init(perHost: Int = 4, capacity: Int = 1024) {
        self.perHost = perHost
        self.capacity = capacity
    }

    /// Stores `challenge` under `id` unless the host or the instance holds too many.
    func add(_ id: String, _ challenge: Pending, now: Int64) -> Admission {
        lock.withLock { () -> Admission in
            pending = pending.filter { $0.value.expires > now }
            guard pending.count < capacity else { return .full }
            let held = pending.values.filter { $0.host.utf8.elementsEqual(challenge.host.utf8) }.count
            guard held < perHost else { return .hostFull }
            pending[id] = challenge
            return .admitted
        }
    }

    /// Removes and returns the challenge `id` if it has not expired.
    func take(_ id: String, now: Int64) -> Pending? {
        lock.withLock { () -> Pending? in
            guard let found = pending.removeValue(forKey: id), found.expires > now else { return nil }
            return found
        }
    }
}
