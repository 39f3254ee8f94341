import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthTransport
import XCTest

/// A host key's registration proof (`TokenPurpose.hostProof`): signed by the new host key,
/// `typ` fingerauth-host-proof+jwt, `sub` and `iss` both the host. Neither a user's
/// registration proof nor a login token passes for one, and it passes for neither of them.
extension TokenVerifierTests {
    func hostProof(_ maker: TokenMaker, kid: String? = nil, sub: String = "web01", iss: String = "web01", jti: String)
        -> String
    {
        maker.token(
            TokenMaker.claims(now: now, sub: sub, iss: iss, jti: jti),
            header: maker.header(kid: kid, typ: TokenType.hostKeyProof))
    }

    func testHostProofMustBeSignedByTheNewKeyForTheHostItself() throws {
        let o = try XCTUnwrap(other)
        let a = try XCTUnwrap(alice)
        let purpose = TokenPurpose.hostProof(jwk: o.jwk, kid: o.kid, host: "web01")
        guard case let .valid(token, _) = verifier.check(hostProof(o, jti: "h1"), for: purpose) else {
            return XCTFail("a host proof of the new key for its host is valid")
        }
        XCTAssertEqual([token.identity.user, token.identity.host, token.identity.kid], ["web01", "web01", o.kid])
        XCTAssertEqual(refusal(hostProof(o, kid: a.kid, jti: "h2"), purpose), .kidNotThumbprint)
        XCTAssertEqual(refusal(hostProof(a, kid: o.kid, jti: "h3"), purpose), .signature)
        XCTAssertEqual(refusal(hostProof(o, sub: "alice", jti: "h4"), purpose), .wrongSubject)
        XCTAssertEqual(refusal(hostProof(o, iss: "web02", jti: "h5"), purpose), .wrongIssuer)
        // A user's registration proof, or a login token, of the same key and host: another type.
        XCTAssertEqual(
            refusal(o.proof(TokenMaker.claims(now: now, sub: "web01", iss: "web01", jti: "h6")), purpose), .type)
        XCTAssertEqual(
            refusal(o.token(TokenMaker.claims(now: now, sub: "web01", iss: "web01", jti: "h7")), purpose), .type)
        // And a host proof is no user's registration proof.
        XCTAssertEqual(
            refusal(hostProof(o, jti: "h8"), .proof(jwk: o.jwk, kid: o.kid, user: "web01", host: "web01")), .type)
    }
}
