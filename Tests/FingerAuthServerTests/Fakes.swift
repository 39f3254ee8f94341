import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem
import FingerAuthTransport
import FingerAuthWeb
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A clock the test sets by hand (tests run on one thread).
///
/// `@unchecked Sendable`: the test sets it between calls, on the test's own thread.
final class FakeClock: Clock, @unchecked Sendable {
    var current: Int64

    init(_ start: Int64 = 1_800_000_000) { current = start }

    func now() -> Int64 { current }
}

/// Keys in a dictionary; `failing` makes every lookup throw like a broken database.
///
/// `@unchecked Sendable`: filled by the test before the service reads it, on one thread.
final class FakeKeys: KeyDirectory, @unchecked Sendable {
    var keys: [String: RegisteredKey] = [:]
    var failing = false

    func registeredKey(kid: String) throws(StoreError) -> RegisteredKey? {
        if failing { throw StoreError("disk on fire") }
        return keys[kid]
    }
}

/// Shared RSA keys: generating them is the slow part of these tests. `nonisolated(unsafe)`:
/// set once (Swift's lazy globals run the initializer once) and never changed; signing makes
/// an EVP_MD_CTX of its own per call, which OpenSSL 3 allows on one key from many threads.
enum TestKeys {
    nonisolated(unsafe) static let alice: RSAPrivateKey? = try? RSAPrivateKey.generate(bits: 2048)
    nonisolated(unsafe) static let other: RSAPrivateKey? = try? RSAPrivateKey.generate(bits: 2048)
}

/// Builds compact JWTs by hand, signed with FingerAuthCrypto.
struct TokenMaker {
    let key: RSAPrivateKey
    let jwk: JWK
    let kid: String

    init?(_ key: RSAPrivateKey?) {
        guard let key, let jwk = try? key.publicJWK(), let kid = Digest.thumbprint(of: jwk) else { return nil }
        self.key = key
        self.jwk = jwk
        self.kid = kid
    }

    static func claims(
        now: Int64, sub: String = "alice", iss: String = "host1", aud: JSONValue = .string("aud"),
        ttl: Int64 = 30, jti: String = "jti-1"
    ) -> [(String, JSONValue)] {
        [
            ("iss", .string(iss)), ("sub", .string(sub)), ("aud", aud), ("iat", .integer(now)),
            ("nbf", .integer(now)), ("exp", .integer(now + ttl)), ("jti", .string(jti)), ("service", .string("sudo")),
        ]
    }

    func header(
        alg: String = "RS256", kid: String? = nil, typ: String = TokenType.login,
        extra: [(String, JSONValue)] = []
    ) -> JSONValue {
        .object([("alg", .string(alg)), ("typ", .string(typ)), ("kid", .string(kid ?? self.kid))] + extra)
    }

    /// A registration proof (typ fingerauth-proof+jwt).
    func proof(_ claims: [(String, JSONValue)]) -> String {
        token(claims, header: header(typ: TokenType.registrationProof))
    }

    /// A key holder's revocation token (typ fingerauth-revoke+jwt).
    func revocation(_ claims: [(String, JSONValue)]) -> String {
        token(claims, header: header(typ: TokenType.keyRevocation))
    }

    /// Signs `claims` under `header` (RS256 signature whatever the header says).
    func token(_ claims: [(String, JSONValue)], header: JSONValue? = nil) -> String {
        let input = CompactJWT.signingInput(header: header ?? self.header(), claims: .object(claims))
        let signature = (try? key.signRS256(input)) ?? []
        return CompactJWT.serialize(signingInput: input, signature: signature)
    }
}

/// A fresh database path under /tmp, removed by `cleanup`.
struct TempDatabase {
    let directory: String
    var path: String { directory + "/test.db" }

    init() {
        var template = Array("/tmp/fa-server-test.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
        }
        directory = made ?? "/tmp"
    }

    func cleanup() {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
        rmdir(directory)
    }
}

/// An `AuthStorage` that hands every call to an SQLite store; tests subclass it to change
/// one behaviour (how commits are batched, where failure counts live).
///
/// `@unchecked Sendable`: forwards to a thread-safe SQLite store; subclasses say for their
/// own fields.
class ForwardingStore: AuthStorage, @unchecked Sendable {
    let base: SQLiteStore

    init(_ base: SQLiteStore) { self.base = base }

    func registeredKey(kid: String) throws(StoreError) -> RegisteredKey? { try base.registeredKey(kid: kid) }
    func close() { base.close() }
    func health() -> StoreHealth { base.health() }
    func durability() throws(StoreError) -> String { try base.durability() }
    func databaseTime() throws(StoreError) -> Int64 { try base.databaseTime() }
    func commit(_ items: [WriteItem]) throws(StoreError) -> [WriteOutcome] { try base.commit(items) }
    func listKeys() throws(StoreError) -> [RegisteredKey] { try base.listKeys() }
    func keysPage(_ page: Paging) throws(StoreError) -> [RegisteredKey] { try base.keysPage(page) }
    func register(
        _ key: RegisteredKey, proofJTI: String, keepUntil: Int64, audit: AuditEvent, keyLimit: Int,
        now: Int64
    ) throws(StoreError) -> RegistrationResult {
        try base.register(key, proofJTI: proofJTI, keepUntil: keepUntil, audit: audit, keyLimit: keyLimit, now: now)
    }
    func revoke(kid: String, now: Int64) throws(StoreError) -> RevocationResult { try base.revoke(kid: kid, now: now) }
    func revokeKeys(user: String?, host: String?, now: Int64) throws(StoreError) -> [RegisteredKey] {
        try base.revokeKeys(user: user, host: host, now: now)
    }
    func approve(kid: String) throws(StoreError) -> ApprovalResult { try base.approve(kid: kid) }
    func activeKeyHosts(user: String, limit: Int) throws(StoreError) -> [String] {
        try base.activeKeyHosts(user: user, limit: limit)
    }
    func keyCounts() throws(StoreError) -> [(KeyStatus, Int64)] { try base.keyCounts() }
    func createHostToken(host: String, now: Int64) throws(StoreError) -> String {
        try base.createHostToken(host: host, now: now)
    }
    func host(forToken token: String) throws(StoreError) -> String? { try base.host(forToken: token) }
    func listHostTokens() throws(StoreError) -> [HostTokenRecord] { try base.listHostTokens() }
    func revokeHostTokens(id: String?, host: String?, now: Int64) throws(StoreError) -> HostRevocation {
        try base.revokeHostTokens(id: id, host: host, now: now)
    }
    func accessToken(sha256: String) throws(StoreError) -> AccessTokenState? { try base.accessToken(sha256: sha256) }
    func audit(_ event: AuditEvent, now: Int64) throws(StoreError) { try base.audit(event, now: now) }
    func auditRecords(_ filter: AuditFilter) throws(StoreError) -> [AuditRecord] { try base.auditRecords(filter) }
    func prune(_ policy: PrunePolicy) throws(StoreError) -> PruneResult { try base.prune(policy) }
    func policySnapshot(user: String, host: String) throws(StoreError) -> PolicySnapshot {
        try base.policySnapshot(user: user, host: host)
    }
    func policyRules() throws(StoreError) -> [PolicyRule] { try base.policyRules() }
    func changePolicy(_ change: PolicyChange, audit: AuditEvent, now: Int64) throws(StoreError) -> PolicyChangeResult {
        try base.changePolicy(change, audit: audit, now: now)
    }
    func hostSummaries(page: Paging?) throws(StoreError) -> [HostSummary] { try base.hostSummaries(page: page) }
    func userLists() throws(StoreError) -> [(list: String, users: [String])] { try base.userLists() }
    func addChallenge(_ challenge: StoredChallenge, perHost: Int, capacity: Int, now: Int64) throws(StoreError)
        -> ChallengeAdmission
    {
        try base.addChallenge(challenge, perHost: perHost, capacity: capacity, now: now)
    }
    func takeChallenge(id: String, now: Int64) throws(StoreError) -> StoredChallenge? {
        try base.takeChallenge(id: id, now: now)
    }
    func createAdmin(name: String, setupDigest: [UInt8], expires: Int64, now: Int64) throws(StoreError) -> Bool {
        try base.createAdmin(name: name, setupDigest: setupDigest, expires: expires, now: now)
    }
    func completeAdminSetup(setupDigest: [UInt8], passwordHash: String, now: Int64) throws(StoreError) -> String? {
        try base.completeAdminSetup(setupDigest: setupDigest, passwordHash: passwordHash, now: now)
    }
    func adminPasswordHash(name: String) throws(StoreError) -> String? { try base.adminPasswordHash(name: name) }
    func listAdmins() throws(StoreError) -> [(name: String, ready: Bool)] { try base.listAdmins() }
    func consoleAudit(_ query: ConsoleAuditQuery) throws(StoreError) -> [AuditRecord] { try base.consoleAudit(query) }
    func lastLogins(of keys: [RegisteredKey]) throws(StoreError) -> [String: Int64] { try base.lastLogins(of: keys) }
    func lastLogins(hosts: [String]) throws(StoreError) -> [String: Int64] { try base.lastLogins(hosts: hosts) }
    func loginStages(hosts: [String], since: Int64, limit: Int) throws(StoreError) -> [String: [LoginStageReport]] {
        try base.loginStages(hosts: hosts, since: since, limit: limit)
    }
    func ekPin(host: String) throws(StoreError) -> EKPin? { try base.ekPin(host: host) }
    func changeEKPin(_ change: EKPinChange, admin: String, peer: String, now: Int64) throws(StoreError) -> EKPinResult {
        try base.changeEKPin(change, admin: admin, peer: peer, now: now)
    }
    func loginsPerHour(since: Int64) throws(StoreError) -> [(hour: Int64, accepted: Int64, refused: Int64)] {
        try base.loginsPerHour(since: since)
    }
    func auditUsers() throws(StoreError) -> [(user: String, rows: Int64)] { try base.auditUsers() }
    func adminSetupState(setupDigest: [UInt8], now: Int64) throws(StoreError) -> AdminSetupState {
        try base.adminSetupState(setupDigest: setupDigest, now: now)
    }
    func resetAdmin(name: String, setupDigest: [UInt8], expires: Int64) throws(StoreError) -> Bool {
        try base.resetAdmin(name: name, setupDigest: setupDigest, expires: expires)
    }
    func removeAdmin(name: String) throws(StoreError) -> Bool { try base.removeAdmin(name: name) }
    func topRefusals(since: Int64, limit: Int) throws(StoreError) -> [(reason: String, count: Int64)] {
        try base.topRefusals(since: since, limit: limit)
    }
    var sharesFailureCounts: Bool { false }
    func failureWindow(key: String, now: Int64) throws(StoreError) -> FailureWindow? { nil }
    func loginReads(user: String, host: String, failureKeys: [String], now: Int64) throws(StoreError) -> LoginReads {
        try base.loginReads(user: user, host: host, failureKeys: failureKeys, now: now)
    }
    func countAttempt(key: String, now: Int64, window: Int64) throws(StoreError) -> Int {
        try base.countAttempt(key: key, now: now, window: window)
    }
    func takeBackAttempt(key: String, now: Int64) throws(StoreError) { try base.takeBackAttempt(key: key, now: now) }
    func grantStates(gids: [String], now: Int64) throws(StoreError) -> [String: GrantState] {
        try base.grantStates(gids: gids, now: now)
    }
    func liveGrants(host: String?, now: Int64) throws(StoreError) -> [IssuedGrant] {
        try base.liveGrants(host: host, now: now)
    }
    func withdrawGrants(host: String, user: String?, admin: String, peer: String, now: Int64) throws(StoreError) -> Int
    {
        try base.withdrawGrants(host: host, user: user, admin: admin, peer: peer, now: now)
    }
    func storeOfflineRecords(_ upload: OfflineUpload) throws(StoreError) -> OfflineUploadResult {
        try base.storeOfflineRecords(upload)
    }
    func holdsOfflineGrants() throws(StoreError) -> Bool { try base.holdsOfflineGrants() }
    func openApproval(
        _ approval: ApprovalRecord, jti: String, keepUntil: Int64, muteSeconds: Int64, audit: AuditEvent, now: Int64
    ) throws(StoreError) -> ApprovalAdmission {
        try base.openApproval(
            approval, jti: jti, keepUntil: keepUntil, muteSeconds: muteSeconds, audit: audit, now: now)
    }
    func approval(id: String) throws(StoreError) -> ApprovalRecord? { try base.approval(id: id) }
    func pendingApprovals(user: String, now: Int64) throws(StoreError) -> [ApprovalRecord] {
        try base.pendingApprovals(user: user, now: now)
    }
    func decideApproval(
        _ decision: ApprovalDecision, audit: @Sendable (ApprovalRecord) -> [AuditEvent], now: Int64
    ) throws(StoreError) -> DecisionResult {
        try base.decideApproval(decision, audit: audit, now: now)
    }
    func closeApproval(
        id: String, as status: ApprovalStatus, audit: @Sendable (ApprovalRecord) -> AuditEvent, now: Int64
    ) throws(StoreError) -> ApprovalRecord? {
        try base.closeApproval(id: id, as: status, audit: audit, now: now)
    }
    func approvals(user: String?, host: String?, limit: Int) throws(StoreError) -> [ApprovalRecord] {
        try base.approvals(user: user, host: host, limit: limit)
    }
}

/// A service over `store` wired as the daemon wires it: a group commit (not started) that
/// drains the service's refusal counter, OpenSSL for the cryptography.
func wiredService(
    store: any AuthStorage, policy: VerifierPolicy, settings: ServiceSettings = ServiceSettings(),
    clock: any AuthClock = SystemClock(), log: any ServiceLog = RequestLog(fd: -1)
) -> AuthenticatorService {
    let refusals = RefusalCounter(window: settings.addressLimit.window)
    let writer = GroupCommit(store: store, periodic: { refusals.drain() }, log: { [log] in log.message($0) })
    return AuthenticatorService(
        store: store, writer: writer, crypto: OpenSSLAuthenticatorCrypto(), policy: policy,
        settings: settings, clock: clock, log: log, refusals: refusals)
}

extension AuthenticatorService {
    /// `request` answered as the login listener answers it (`LoginAPI`: routing, the
    /// outcome's status and body, the request's line in the service's log), its writes
    /// committed on this thread.
    func handle(_ request: HTTPRequest) -> HTTPResponse {
        LoginAPI(service: self, log: (log as? any RequestLines) ?? RequestLog(fd: -1)).handle(request)
    }
}

/// A test case over a fresh SQLite database and a clock the test moves (each test gets its own).
class DatabaseTestCase: XCTestCase {
    var temp = TempDatabase()
    var clock = FakeClock()

    override func setUp() {
        temp = TempDatabase()
        clock = FakeClock()
    }

    override func tearDown() { temp.cleanup() }
}
