import FingerAuthCore
import FingerAuthDomain

/// TPM credential-activation challenges in the database, so that the `POST /v1/keys` that
/// answers one may reach any instance of a fleet: the same SQL on both stores (through
/// `SQLConnection`), each call one transaction of the store's own.
enum ChallengeTables {
    /// Drops expired challenges, then stores `challenge` unless its host or the whole table
    /// is at its limit.
    static func add(
        _ db: some SQLConnection, _ challenge: StoredChallenge, perHost: Int, capacity: Int,
        now: Int64
    ) throws(StoreError) -> ChallengeAdmission {
        _ = try db.textRows("DELETE FROM attestation_challenges WHERE expires <= CAST(?1 AS BIGINT)", [String(now)])
        let counts = try db.textRows(
            """
            SELECT CAST(COUNT(*) AS TEXT), CAST(COALESCE(SUM(CASE WHEN host = ?1 THEN 1 ELSE 0 END), 0) AS TEXT)
              FROM attestation_challenges
            """, [challenge.host])
        guard counts.count == 1, counts[0].count == 2, let all = counts[0][0].flatMap({ Int($0) }),
            let held = counts[0][1].flatMap({ Int($0) })
        else { throw StoreError("corrupt challenge count") }
        guard all < capacity else { return .full }
        guard held < perHost else { return .hostFull }
        _ = try db.textRows(
            """
            INSERT INTO attestation_challenges (id, "user", host, ak_public, secret_sha256, nonce, expires, ek_sha256)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, CAST(?7 AS BIGINT), ?8)
            """,
            [
                challenge.id, challenge.user, challenge.host, Base64URL.encode(challenge.attestationKey),
                Base64URL.encode(challenge.secretDigest), Base64URL.encode(challenge.nonce), String(challenge.expires),
                challenge.ek,
            ])
        return .admitted
    }

    /// Removes the challenge `id` and returns it if it had not expired: each is used once.
    static func take(_ db: some SQLConnection, id: String, now: Int64) throws(StoreError) -> StoredChallenge? {
        let rows = try db.textRows(
            """
            DELETE FROM attestation_challenges WHERE id = ?1
            RETURNING "user", host, ak_public, secret_sha256, nonce, CAST(expires AS TEXT), ek_sha256
            """, [id])
        guard let row = rows.first else { return nil }
        guard row.count == 7, let user = row[0], let host = row[1],
            let ak = row[2].flatMap(Base64URL.decode), let digest = row[3].flatMap(Base64URL.decode),
            let nonce = row[4].flatMap(Base64URL.decode), let expires = row[5].flatMap({ Int64($0) }),
            let ek = row[6]
        else {
            throw StoreError("corrupt row in table attestation_challenges")
        }
        guard expires > now, !ek.isEmpty else { return nil }
        return StoredChallenge(
            id: id, user: user, host: host, attestationKey: ak, secretDigest: digest, nonce: nonce,
            expires: expires, ek: ek)
    }
}
