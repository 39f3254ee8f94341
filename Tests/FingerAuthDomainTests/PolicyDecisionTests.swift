import FingerAuthDomain
import XCTest

/// The policy's decision logic alone: first match wins, lists, labels, wildcards, key kinds,
/// the default. The same rules through the real /v1/login are in the integration tests.
final class PolicyDecisionTests: XCTestCase {
    private func rule(_ id: Int64, _ stage: PolicyStage = .login, users: [String] = ["*"], hosts: [String] = ["*"],
                      services: [String] = ["*"], key: KeyKind? = nil, _ action: PolicyAction) -> PolicyRule {
        PolicyRule(id: id, position: Int(id), stage: stage, users: users, hosts: hosts, services: services, keyKind: key, action: action)
    }

    func testNoRuleAllowsByDefault() {
        let decision = PolicySnapshot().decide(PolicyRequest(stage: .login, user: "alice", host: "h", service: "sudo"))
        XCTAssertEqual(decision, PolicyDecision(allowed: true, rule: nil))
    }

    func testFirstMatchWinsInPositionOrderNotIdOrder() {
        var late = rule(1, users: ["alice"], .deny)
        late.position = 2
        var early = rule(2, users: ["*"], .allow)
        early.position = 1
        let decision = PolicySnapshot(rules: [late, early]).decide(PolicyRequest(stage: .login, user: "alice", host: "h", service: "sudo"))
        XCTAssertEqual(decision.rule?.id, 2)
        XCTAssertTrue(decision.allowed)
    }

    func testListsAndLabelsMatchOnlyTheirMembers() {
        let rules = [rule(1, users: ["list:dba"], hosts: ["label:db"], .allow), rule(2, hosts: ["label:db"], .deny)]
        let member = PolicySnapshot(rules: rules, hostLabels: ["db"], userLists: ["dba"])
        XCTAssertEqual(member.decide(PolicyRequest(stage: .login, user: "carol", host: "db01", service: "sudo")).rule?.id, 1)
        let stranger = PolicySnapshot(rules: rules, hostLabels: ["db"], userLists: [])
        let refused = stranger.decide(PolicyRequest(stage: .login, user: "mallory", host: "db01", service: "sudo"))
        XCTAssertEqual(refused, PolicyDecision(allowed: false, rule: rules[1]))
        // A user literally named "list:dba" cannot stand in for the list.
        XCTAssertFalse(PolicyRule.problem(in: ["list:"], field: "users") == nil)
    }

    func testRequireHardwareKeyRefusesSoftwareKeysOnly() {
        let rules = [rule(1, services: ["sudo"], .requireHardwareKey)]
        let snapshot = PolicySnapshot(rules: rules)
        XCTAssertFalse(snapshot.decide(PolicyRequest(stage: .login, user: "a", host: "h", service: "sudo", keyKind: .software)).allowed)
        XCTAssertTrue(snapshot.decide(PolicyRequest(stage: .login, user: "a", host: "h", service: "sudo", keyKind: .hardware)).allowed)
        XCTAssertNil(snapshot.decide(PolicyRequest(stage: .login, user: "a", host: "h", service: "login")).rule)
    }

    func testRequireProvisionedEKTakesOnlyAKeyOfTheAdminsEK() {
        let ek = String(repeating: "a", count: 64), other = String(repeating: "b", count: 64)
        let rules = [rule(1, .registration, .requireProvisionedEK)]
        func allowed(_ snapshot: PolicySnapshot, _ kind: KeyKind, _ keyEK: String?) -> Bool {
            snapshot.decide(PolicyRequest(stage: .registration, user: "a", host: "h", keyKind: kind, ek: keyEK)).allowed
        }
        let provisioned = PolicySnapshot(rules: rules, provisionedEK: ek)
        XCTAssertTrue(allowed(provisioned, .hardware, ek))
        XCTAssertFalse(allowed(provisioned, .hardware, other))
        XCTAssertFalse(allowed(provisioned, .hardware, nil))
        XCTAssertFalse(allowed(provisioned, .software, ek))
        // A host pinned on first use only (or not at all) has no provisioned EK.
        XCTAssertFalse(allowed(PolicySnapshot(rules: rules), .hardware, ek))
        XCTAssertEqual(PolicySnapshot(rules: rules).decide(PolicyRequest(stage: .registration, user: "a", host: "h")).summary,
                       "deny by rule 1 (require-provisioned-ek): registration users=* hosts=* services=* key=* -> require-provisioned-ek")
    }

    func testRegistrationRulesAndLoginRulesDoNotMix() {
        let rules = [rule(1, .registration, hosts: ["build01"], .deny), rule(2, services: ["sshd"], .deny)]
        let snapshot = PolicySnapshot(rules: rules)
        XCTAssertFalse(snapshot.decide(PolicyRequest(stage: .registration, user: "a", host: "build01")).allowed)
        XCTAssertTrue(snapshot.decide(PolicyRequest(stage: .login, user: "a", host: "build01", service: "sudo")).allowed)
        // A login rule for one service never applies to a registration (it has no service).
        XCTAssertTrue(snapshot.decide(PolicyRequest(stage: .registration, user: "a", host: "web01")).allowed)
    }

    func testMovingARuleKeepsEveryOtherInOrder() {
        XCTAssertEqual(PolicyOrder.moving(3, to: 1, in: [1, 2, 3, 4]), [3, 1, 2, 4])
        XCTAssertEqual(PolicyOrder.moving(1, to: 99, in: [1, 2, 3]), [2, 3, 1])
        XCTAssertEqual(PolicyOrder.moving(2, to: 0, in: [1, 2, 3]), [2, 1, 3])
    }

    func testPatternsWithSeparatorsOrControlCharactersAreRefused() {
        XCTAssertNotNil(PolicyRule.problem(in: [], field: "users"))
        XCTAssertNotNil(PolicyRule.problem(in: [""], field: "users"))
        XCTAssertNotNil(PolicyRule.problem(in: ["a b"], field: "users"))
        XCTAssertNotNil(PolicyRule.problem(in: ["a\u{1}"], field: "users"))
        XCTAssertNil(PolicyRule.problem(in: ["alice", "list:dba", "*"], field: "users"))
    }
}
