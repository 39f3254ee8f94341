import FingerAuthCore

/// An offline grant as the authenticator records it when it issues one (`offline_grants`):
/// what the signed grant says, so that the console can list the live ones and a host's
/// sync can learn which were withdrawn.
public struct IssuedGrant: Sendable, Equatable {
    public var gid: String
    public var user: String
    public var host: String
    public var kid: String
    public var issued: Int64
    public var notAfter: Int64
    public var uses: Int
    public var services: [String]
    /// The `offline` rule that allowed it.
    public var rule: Int64

    public init(
        gid: String, user: String, host: String, kid: String, issued: Int64, notAfter: Int64, uses: Int,
        services: [String], rule: Int64
    ) {
        self.gid = gid
        self.user = user
        self.host = host
        self.kid = kid
        self.issued = issued
        self.notAfter = notAfter
        self.uses = uses
        self.services = services
        self.rule = rule
    }

    /// The claims the host receives, signed.
    public var grant: OfflineGrant {
        OfflineGrant(
            gid: gid, user: user, host: host, kid: kid, issuedAt: issued, notAfter: notAfter,
            ttlSeconds: notAfter - issued, uses: uses, services: services)
    }
}

/// Where a grant a host holds stands, as its sync learns it.
public enum GrantState: String, Sendable, Equatable {
    /// Issued, unexpired, its key active, not replaced nor withdrawn by an admin.
    case live
    /// Anything else: the host drops it.
    case withdrawn
}

/// One offline login record whose signature verified with its kid's registered key, with
/// the SHA-256 of its line (the next record's `prev`), base64url.
public struct VerifiedOfflineRecord: Sendable, Equatable {
    public var record: OfflineRecord
    public var lineHash: String

    public init(record: OfflineRecord, lineHash: String) {
        self.record = record
        self.lineHash = lineHash
    }
}

/// How an upload of one key's records ended: the last sequence number the authenticator
/// holds for the key (the host need not send up to it again) and how many rows it wrote.
public struct OfflineUploadResult: Sendable, Equatable {
    public var lastSeq: Int64
    public var stored: Int
    /// Gaps and broken chains found (each one an `offline_gap` audit row).
    public var flagged: Int

    public init(lastSeq: Int64, stored: Int, flagged: Int) {
        self.lastSeq = lastSeq
        self.stored = stored
        self.flagged = flagged
    }
}

/// The offline grants the authenticator issued and the offline logins hosts reported.
public protocol OfflineGrantStore: Sendable {
    /// Where each of `gids` stands at `now` (unknown ones are withdrawn).
    func grantStates(gids: [String], now: Int64) throws(StoreError) -> [String: GrantState]
    /// Live grants (of `host`, or every host), newest first.
    func liveGrants(host: String?, now: Int64) throws(StoreError) -> [IssuedGrant]
    /// Withdraws the live grants of `host` (and of `user` when given), with an audit row by
    /// `admin` from `peer`; how many.
    func withdrawGrants(host: String, user: String?, admin: String, peer: String, now: Int64) throws(StoreError) -> Int
    /// Stores one key's verified records in sequence order, in one transaction: each record
    /// after the last one held becomes an `offline_login` row at its own time; a record whose
    /// `seq` skips ahead or whose `prev` is not the last record's hash first writes an
    /// `offline_gap` row; records held already are skipped.
    func storeOfflineRecords(_ records: [VerifiedOfflineRecord], kid: String, peer: String, now: Int64)
        throws(StoreError) -> OfflineUploadResult
}

/// The offline-grant key as the service uses it: FingerAuthCrypto's `GrantSigningKey`.
public protocol GrantSigner: Sendable {
    /// The thumbprint of the key that signs.
    var keyID: String { get }
    /// ES256 of `data` (`r || s`); nil when the library fails.
    func signES256(_ data: [UInt8]) -> [UInt8]?
    /// Every key hosts should pin now: the signing key and, during a rotation, the previous
    /// one, by thumbprint.
    var publishedKeys: [(kid: String, key: GrantKeyJWK)] { get }
}
