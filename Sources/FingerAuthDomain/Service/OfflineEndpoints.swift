import FingerAuthCore

/// Offline grants at the authenticator: issued with an accepted login where the policy's
/// `offline` rules allow one, and `POST /v1/offline-sync`, where a host learns which of its
/// grants still stand and uploads the offline logins it recorded.
extension AuthenticatorService {
    /// Most grants and records one sync carries.
    static let maxSyncGrants = 32
    static let maxSyncRecords = 16

    /// The grant an accepted login earns now (the first matching `offline` rule), or nil.
    func offlineGrant(_ verified: VerifiedToken, _ request: PolicyRequest, _ snapshot: PolicySnapshot) -> IssuedGrant? {
        guard let allowance = snapshot.offlineGrant(for: request), let bytes = crypto.bytes(16), bytes.count == 16
        else { return nil }
        let now = clock.now()
        let (notAfter, overflow) = now.addingReportingOverflow(allowance.limits.seconds)
        guard !overflow else { return nil }
        return IssuedGrant(
            gid: Base64URL.encode(bytes), user: verified.identity.user, host: verified.identity.host,
            kid: verified.identity.kid, issued: now, notAfter: notAfter, uses: allowance.limits.uses,
            services: allowance.services, rule: allowance.rule)
    }

    /// What an accepted login says of offline grants when a grant key is configured: the
    /// signed grant (or none: the host drops the one it holds) and the grant keys.
    func offlineAllowance(_ issued: IssuedGrant?) -> OfflineAllowance? {
        guard let signer = settings.grantSigner else { return nil }
        var grant: String?
        if let issued {
            let input = CompactJWT.signingInput(
                header: OfflineGrant.header(grantKeyID: signer.keyID), claims: issued.grant.claims)
            if let signature = signer.signES256(input) {
                grant = CompactJWT.serialize(signingInput: input, signature: signature)
            } else {
                log.message("offline grant \(issued.gid) could not be signed")
            }
        }
        return OfflineAllowance(grant: grant, keys: grantKeys(signer))
    }

    func grantKeys(_ signer: any GrantSigner) -> JSONValue {
        .array(signer.publishedKeys.map { $0.key.json(kid: $0.kid) })
    }

    /// An offline sync, `{"grants":[gid…],"records":[record…]}`: `offlineSynced` with each
    /// grant's state (live or withdrawn), `held` and `rejected` — `held` names, one by one,
    /// the records the authenticator holds,
    /// `rejected` those it will never store (not verified, a never-approved key, a revoked
    /// key's outside its grants); the host drops only these and sends the rest again.
    /// No credential: a gid is a random name only its host knows and says no more than
    /// live or not, and each record carries its device key's signature. A record that does
    /// not verify, or whose key was never approved, is dropped and counts against the
    /// address. Every upload that carries records counts against its address and each of
    /// its keys (`ServiceSettings.offlineUploads`). Not offered (`notOffered`) where no grant key is
    /// configured and no grant is held: nothing there could ever make a record valid.
    func offlineSync(_ request: ServiceRequest, _ exchange: Exchange) -> Step {
        if settings.grantSigner == nil {
            do {
                guard try store.holdsOfflineGrants() else { return .outcome(.notOffered) }
            } catch {
                log.message("offline sync unavailable: \(error)")
                return .outcome(.unavailable)
            }
        }
        let body: JSONValue
        switch Self.jsonBody(request) {
        case let .failure(failure): return countingFailure(failure.outcome, exchange)
        case let .success(json): body = json
        }
        let gidValues = body["grants"]?.arrayValue ?? []
        let recordValues = body["records"]?.arrayValue ?? []
        let gids = gidValues.compactMap(\.stringValue)
        let lines = recordValues.compactMap(\.stringValue)
        guard body.objectValue != nil, gids.count == gidValues.count, lines.count == recordValues.count,
            gids.count <= Self.maxSyncGrants, lines.count <= Self.maxSyncRecords,
            gids.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 64 && $0.utf8.allSatisfy(Base64URL.isAlphabet) })
        else { return countingFailure(.malformed(.request), exchange) }
        let now = clock.now()
        var items: [WriteItem] = []
        if !lines.isEmpty {
            if let wait = uploadLimited(addressUploads, exchange.address, now: now, exchange) { return wait }
            items += addressUploads.failureItems(exchange.address, now: now)
        }
        var byKey: [String: [VerifiedOfflineRecord]] = [:]
        var forged = 0
        var rejected: [String: [Int64]] = [:]
        for line in lines {
            if let verified = verifiedRecord(line) {
                byKey[verified.record.kid, default: []].append(verified)
            } else {
                forged += 1
                // Named back by what it claims: only its sender keeps such a record.
                if let claimed = OfflineRecord(line: line), TokenVerifier.isWellFormedKid(claimed.kid) {
                    rejected[claimed.kid, default: []].append(claimed.seq)
                }
            }
        }
        for kid in byKey.keys.sorted() {
            if let wait = uploadLimited(keyUploads, kid, now: now, exchange) { return wait }
            items += keyUploads.failureItems(kid, now: now)
        }
        if forged > 0 { items += addresses.failureItems(exchange.address, now: now) }
        let states: [String: GrantState]
        do { states = try store.grantStates(gids: gids, now: now) } catch {
            log.message("offline sync unavailable: \(error)")
            return .outcome(.unavailable)
        }
        let peer = LogText.clean(exchange.address)
        let kids = byKey.keys.sorted()
        let uploads = kids.compactMap { kid in
            byKey[kid].map { WriteItem.offlineRecords(OfflineUpload(records: $0, kid: kid, peer: peer, now: now)) }
        }
        let report = OfflineSyncReport(
            grants: gids.map { ($0, states[$0] ?? .withdrawn) }, held: [:], rejected: rejected,
            grantKeys: settings.grantSigner.map(grantKeys))
        guard !uploads.isEmpty || !items.isEmpty else { return .outcome(.offlineSynced(report)) }
        return .write(uploads + items) { [self] result in
            guard case let .success(outcomes) = result else {
                log.message("offline sync unavailable: records not stored")
                return .outcome(.unavailable)
            }
            var held: [String: [Int64]] = [:]
            var refused = rejected
            for (kid, outcome) in zip(kids, outcomes) {
                guard case let .offlineStored(stored) = outcome else { continue }
                held[kid] = stored.held
                if !stored.rejected.isEmpty { refused[kid, default: []] += stored.rejected }
                if stored.flagged > 0 || !stored.rejected.isEmpty || stored.deferred > 0 {
                    log.message(
                        "offline records of key \(kid): \(stored.flagged) gap(s) flagged, \(stored.rejected.count) "
                            + "rejected, \(stored.deferred) deferred (rows per key)")
                }
            }
            var answered = report
            answered.held = held
            answered.rejected = refused
            return .outcome(.offlineSynced(answered))
        }
    }

    /// The refusal when `key` is past its offline uploads (`limiter`), or nil.
    private func uploadLimited(_ limiter: FailureLimiter, _ key: String, now: Int64, _ exchange: Exchange) -> Step? {
        let wait: Int64?
        do { wait = try limiter.retryAfter(key, now: now) } catch {
            log.message("rate limit counter unavailable: \(error)")
            return .outcome(.unavailable)
        }
        guard let wait else { return nil }
        exchange.facts.outcome = .deny
        exchange.facts.reason = .code(.rateLimited)
        metrics.rateLimited(scope: "offline")
        return .outcome(.tooMany(retryAfter: wait))
    }

    /// The record of `line` once its device key's signature verified and that key is
    /// registered to the record's user and host and was approved (active, or revoked since:
    /// a record made before a revocation is still evidence; a pending key's is nobody's),
    /// and its `jti`, `service` and `gid` are words a login token could carry
    /// (`TokenVerifier.isClaimWord`).
    private func verifiedRecord(_ line: String) -> VerifiedOfflineRecord? {
        guard let jws = try? CompactJWT(parsing: line, maxBytes: 4096),
            jws.header["alg"]?.stringValue == "RS256", jws.header["typ"]?.stringValue == OfflineRecord.type,
            let kid = jws.header["kid"]?.stringValue, TokenVerifier.isWellFormedKid(kid),
            let record = OfflineRecord(claims: jws.claims), record.kid.sameBytes(as: kid),
            TokenVerifier.isClaimWord(record.jti, maxBytes: verifier.policy.maxJTIBytes),
            ServiceName.isValid(record.service), TokenVerifier.isClaimWord(record.gid),
            let found = try? verifier.keys.lookup(kid, now: clock.now()), let publicKey = found.1,
            found.0.status != .pending,
            found.0.user.sameBytes(as: record.user), found.0.host.sameBytes(as: record.host),
            publicKey.verifyRS256(signature: jws.signature, data: jws.signingInput),
            let digest = crypto.sha256(Array(line.utf8))
        else { return nil }
        return VerifiedOfflineRecord(record: record, lineHash: Base64URL.encode(digest))
    }
}
