import FingerAuthCore
import FingerAuthDomain
import FingerAuthKeyFormats
import XCTest

/// An audit row's words are enums in the code and text in the database: what is written
/// reads back as the same value, and no two kinds of reason share a word (else a row read
/// back would change its meaning).
final class AuditVocabularyTests: XCTestCase {
    func testEventsAndOutcomesReadBackAsWritten() {
        for kind in AuditEventKind.known { XCTAssertEqual(AuditEventKind(name: kind.name), kind) }
        XCTAssertEqual(Set(AuditEventKind.known.map(\.name)).count, AuditEventKind.known.count)
        XCTAssertEqual(AuditEventKind(name: "oauth_token"), .oauthToken)
        XCTAssertEqual(AuditEventKind(name: "from_a_newer_release"), .other("from_a_newer_release"))
        for outcome in AuditOutcome.known { XCTAssertEqual(AuditOutcome(name: outcome.name), outcome) }
        XCTAssertEqual(AuditOutcome.known.map(\.name), ["accept", "deny", "error"])
        XCTAssertEqual(AuditOutcome(name: "skip"), .other("skip"))
    }

    func testNoTwoKindsOfReasonShareAWord() {
        let tokens = Refusal.allCases.map(\.rawValue)
        let attestations = AttestationRefusal.allCases.map(\.rawValue)
        let codes = ReasonCode.allCases.map(\.rawValue)
        let all = tokens + attestations + codes
        XCTAssertEqual(Set(all).count, all.count, "a word stands for two reasons")
        XCTAssertFalse(all.contains { $0.hasPrefix("proof_") }, "a word reads back as a proof's refusal")
    }

    func testEveryReasonReadsBackAsWritten() {
        var reasons: [AuditReason] = Refusal.allCases.map { .token($0) } + Refusal.allCases.map { .proof($0) }
        reasons += AttestationRefusal.allCases.map { .attestation($0) } + ReasonCode.allCases.map { .code($0) }
        reasons.append(.detail("by root: (none) -> rule 3 at 1: login users=* hosts=* services=* key=* -> deny"))
        for reason in reasons { XCTAssertEqual(AuditReason(text: reason.text), reason, reason.text) }
        XCTAssertEqual(AuditReason.proof(.replayed).text, "proof_replayed")
        XCTAssertEqual(AuditReason(text: "proof_of_nothing"), .detail("proof_of_nothing"))
    }
}
