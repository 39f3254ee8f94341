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

    /// The members a login's 200 carries when a grant key is configured: `offline_grant` (the
    /// signed grant, or null: the host drops the one it holds) and `grant_keys`.
    func offlineAnswer(_ issued: IssuedGrant?) -> [(String, JSONValue)] {
        guard let signer = settings.grantSigner else { return [] }
        var grant = JSONValue.null
        if let issued {
            let input = CompactJWT.signingInput(
                header: OfflineGrant.header(grantKeyID: signer.keyID), claims: issued.grant.claims)
            if let signature = signer.signES256(input) {
                grant = .string(CompactJWT.serialize(signingInput: input, signature: signature))
            } else {
                log.message("offline grant \(issued.gid) could not be signed")
            }
        }
        return [("offline_grant", grant), ("grant_keys", grantKeys(signer))]
    }

    func grantKeys(_ signer: any GrantSigner) -> JSONValue {
        .array(signer.publishedKeys.map { $0.key.json(kid: $0.kid) })
    }

    /// `POST /v1/offline-sync` `{"grants":[gid…],"records":[record…]}`: 200
    /// `{"grants":{gid:"live"|"withdrawn"},"records":{kid:last seq held},"grant_keys":[…]}`.
    /// No credential: a gid is a random name only its host knows and says no more than
    /// live or not, and each record carries its device key's signature. A record that does
    /// not verify is dropped (and counts against the address): the next one shows the gap.
    func offlineSync(_ request: HTTPRequest, _ exchange: Exchange) -> Step {
        let body: JSONValue
        switch Self.jsonBody(request) {
        case let .failure(failure): return countingFailure(failure.response, exchange)
        case let .success(json): body = json
        }
        let gidValues = body["grants"]?.arrayValue ?? []
        let recordValues = body["records"]?.arrayValue ?? []
        let gids = gidValues.compactMap(\.stringValue)
        let lines = recordValues.compactMap(\.stringValue)
        guard body.objectValue != nil, gids.count == gidValues.count, lines.count == recordValues.count,
            gids.count <= Self.maxSyncGrants, lines.count <= Self.maxSyncRecords,
            gids.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 64 && $0.utf8.allSatisfy(Base64URL.isAlphabet) })
        else { return countingFailure(.error(400, "invalid_request"), exchange) }
        var byKey: [String: [VerifiedOfflineRecord]] = [:]
        var forged = 0
        for line in lines {
            if let verified = verifiedRecord(line) {
                byKey[verified.record.kid, default: []].append(verified)
            } else {
                forged += 1
            }
        }
        let now = clock.now()
        var held: [(String, JSONValue)] = []
        let states: [String: GrantState]
        do {
            for (kid, records) in byKey.sorted(by: { $0.key < $1.key }) {
                let result = try store.storeOfflineRecords(
                    records, kid: kid, peer: LogText.clean(exchange.address), now: now)
                held.append((kid, .integer(result.lastSeq)))
                if result.flagged > 0 { log.message("offline records of key \(kid): \(result.flagged) gap(s) flagged") }
            }
            states = try store.grantStates(gids: gids, now: now)
        } catch {
            log.message("offline sync unavailable: \(error)")
            return .answer(.error(503, "unavailable"))
        }
        var fields: [(String, JSONValue)] = [
            ("grants", .object(gids.map { ($0, .string((states[$0] ?? .withdrawn).rawValue)) })),
            ("records", .object(held)),
        ]
        if let signer = settings.grantSigner { fields.append(("grant_keys", grantKeys(signer))) }
        let answer = HTTPResponse(status: 200, json: .object(fields))
        return forged > 0 ? countingFailure(answer, exchange) : .answer(answer)
    }

    /// The record of `line` once its device key's signature verified and that key is
    /// registered to the record's user and host (in any status: a record made before a
    /// revocation is still evidence).
    private func verifiedRecord(_ line: String) -> VerifiedOfflineRecord? {
        guard let jws = try? CompactJWT(parsing: line, maxBytes: 4096),
            jws.header["alg"]?.stringValue == "RS256", jws.header["typ"]?.stringValue == OfflineRecord.type,
            let kid = jws.header["kid"]?.stringValue, TokenVerifier.isWellFormedKid(kid),
            let record = OfflineRecord(claims: jws.claims), record.kid.sameBytes(as: kid),
            let found = try? verifier.keys.lookup(kid, now: clock.now()), let publicKey = found.1,
            found.0.user.sameBytes(as: record.user), found.0.host.sameBytes(as: record.host),
            publicKey.verifyRS256(signature: jws.signature, data: jws.signingInput),
            let digest = crypto.sha256(Array(line.utf8))
        else { return nil }
        var kept = record
        kept.at = min(record.at, clock.now())
        return VerifiedOfflineRecord(record: kept, lineHash: Base64URL.encode(digest))
    }
}
