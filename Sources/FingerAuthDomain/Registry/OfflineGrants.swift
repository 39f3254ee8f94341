import FingerAuthCore

/// An offline grant as the authenticator records it when it issues one (`offline_grants`):
/// what the signed grant says, so that the console can list the live ones and a host's
/// sync can learn which were withdrawn.
package struct IssuedGrant: Sendable, Equatable {
    package var gid: String
    package var user: String
    package var host: String
    package var kid: String
    package var issued: Int64
    package var notAfter: Int64
    package var uses: Int
    package var services: [String]
    /// The `offline` rule that allowed it.
    package var rule: Int64

    package init(
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
    package var grant: OfflineGrant {
        OfflineGrant(
            gid: gid, user: user, host: host, kid: kid, issuedAt: issued, notAfter: notAfter,
            ttlSeconds: notAfter - issued, uses: uses, services: services)
    }
}

/// Where a grant a host holds stands, as its sync learns it.
package enum GrantState: String, Sendable, Equatable {
    /// Issued, unexpired, its key active, not replaced nor withdrawn by an admin.
    case live
    /// Anything else: the host drops it.
    case withdrawn
}

/// One offline login record whose signature verified with its kid's registered key, with
/// the SHA-256 of its line (the next record's `prev`), base64url.
package struct VerifiedOfflineRecord: Sendable, Equatable {
    package var record: OfflineRecord
    package var lineHash: String

    package init(record: OfflineRecord, lineHash: String) {
        self.record = record
        self.lineHash = lineHash
    }
}

/// How an upload of one key's records ended: the `seq` of each record the authenticator
/// now holds (stored now or before) and of each it will never store — the host may drop
/// exactly these — and how many rows it wrote, flagged and left for a later upload.
package struct OfflineUploadResult: Sendable, Equatable {
    package var held: [Int64]
    /// A never-approved key's records, and a revoked key's outside its grants or past their uses.
    package var rejected: [Int64]
    package var stored: Int
    /// Gaps, rewinds and broken chains found (each one an `offline_gap` audit row).
    package var flagged: Int
    /// Records past the key's rows of the window (`OfflineUpload.maxRowsPerKey`): neither
    /// held nor rejected, the host sends them again later.
    package var deferred: Int

    package init(held: [Int64] = [], rejected: [Int64] = [], stored: Int = 0, flagged: Int = 0, deferred: Int = 0) {
        self.held = held
        self.rejected = rejected
        self.stored = stored
        self.flagged = flagged
        self.deferred = deferred
    }
}

/// One key's verified records as one upload hands them to the store (`WriteItem.offlineRecords`).
package struct OfflineUpload: Sendable, Equatable {
    package var records: [VerifiedOfflineRecord]
    package var kid: String
    package var peer: String
    /// The authenticator's receipt time: every row is stored at it.
    package var now: Int64

    /// Most `offline_login` and `offline_gap` rows one key writes per `rowWindow` seconds
    /// (by receipt time); records past it wait, unacknowledged, for a later upload.
    package static let maxRowsPerKey = 64
    package static let rowWindow: Int64 = 3600
    /// How far a record's claimed time may lie outside its grant's window (or after its
    /// receipt) and still count as inside: the host's clock is not the authenticator's.
    package static let skew: Int64 = ReplayWindow.maxSkew

    package init(records: [VerifiedOfflineRecord], kid: String, peer: String, now: Int64) {
        self.records = records
        self.kid = kid
        self.peer = peer
        self.now = now
    }
}

/// The offline grants the authenticator issued and the offline logins hosts reported.
package protocol OfflineGrantStore: Sendable {
    /// Where each of `gids` stands at `now` (unknown ones are withdrawn).
    func grantStates(gids: [String], now: Int64) throws(StoreError) -> [String: GrantState]
    /// Live grants (of `host`, or every host), newest first.
    func liveGrants(host: String?, now: Int64) throws(StoreError) -> [IssuedGrant]
    /// Withdraws the live grants of `host` (and of `user` when given), with an audit row by
    /// `admin` from `peer`; how many.
    func withdrawGrants(host: String, user: String?, admin: String, peer: String, now: Int64) throws(StoreError) -> Int
    /// Stores one key's verified records (`upload`) in sequence order, in one transaction,
    /// each judged against the grant it names (`OfflineRecordRows` in FingerAuthStore): an
    /// `offline_login` row at the receipt time (the claimed time in `claimed_time`) —
    /// `accept` inside a grant of that key, `deny` with the reason otherwise — after an
    /// `offline_gap` row where the `seq` jumps, rewinds or repeats or the chain breaks. A
    /// pending key's records, and a revoked key's outside its grants or past their uses, are
    /// stored nowhere. Records held already are acknowledged without a row.
    func storeOfflineRecords(_ upload: OfflineUpload) throws(StoreError) -> OfflineUploadResult
    /// Whether the authenticator holds any offline grant (issued, even ended or withdrawn):
    /// without one, and without a grant key, `/v1/offline-sync` is not served.
    func holdsOfflineGrants() throws(StoreError) -> Bool
}

/// The offline-grant key as the service uses it: FingerAuthCrypto's `GrantSigningKey`.
package protocol GrantSigner: Sendable {
    /// The thumbprint of the key that signs.
    var keyID: String { get }
    /// ES256 of `data` (`r || s`); nil when the library fails.
    func signES256(_ data: [UInt8]) -> [UInt8]?
    /// Every key hosts should pin now: the signing key and, during a rotation, the previous
    /// one, by thumbprint.
    var publishedKeys: [(kid: String, key: GrantKeyJWK)] { get }
}
