import FingerAuthDomain
import XCTest

/// The policy's decision logic alone: first match wins, lists, labels, wildcards, key kinds,
/// the default. The same rules through the real /v1/login are in the integration tests.
final class PolicyDecisionTests: XCTestCase {
    private func rule(
        _ id: Int64, _ stage: PolicyStage = .login, users: [String] = ["*"], hosts: [String] = ["*"],
        services: [String] = ["*"], key: KeyKind? = nil, _ action: PolicyAction
    ) -> PolicyRule {
        PolicyRule(
            id: id, position: Int(id), stage: stage, users: users, hosts: hosts, services: services, keyKind: key,
            action: action)
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
        let decision = PolicySnapshot(rules: [late, early]).decide(
            PolicyRequest(stage: .login, user: "alice", host: "h", service: "sudo"))
        XCTAssertEqual(decision.rule?.id, 2)
        XCTAssertTrue(decision.allowed)
    }

    func testListsAndLabelsMatchOnlyTheirMembers() {
        let rules = [rule(1, users: ["list:dba"], hosts: ["label:db"], .allow), rule(2, hosts: ["label:db"], .deny)]
        let member = PolicySnapshot(rules: rules, hostLabels: ["db"], userLists: ["dba"])
        XCTAssertEqual(
            member.decide(PolicyRequest(stage: .login, user: "carol", host: "db01", service: "sudo")).rule?.id, 1)
        let stranger = PolicySnapshot(rules: rules, hostLabels: ["db"], userLists: [])
        let refused = stranger.decide(PolicyRequest(stage: .login, user: "mallory", host: "db01", service: "sudo"))
        XCTAssertEqual(refused, PolicyDecision(allowed: false, rule: rules[1]))
        // A user literally named "list:dba" cannot stand in for the list.
        XCTAssertFalse(PolicyRule.problem(in: ["list:"], field: "users") == nil)
    }

    func testRequireHardwareKeyRefusesSoftwareKeysOnly() {
        let rules = [rule(1, services: ["sudo"], .requireHardwareKey)]
        let snapshot = PolicySnapshot(rules: rules)
        XCTAssertFalse(
            snapshot.decide(PolicyRequest(stage: .login, user: "a", host: "h", service: "sudo", keyKind: .software))
                .allowed)
        XCTAssertTrue(
            snapshot.decide(PolicyRequest(stage: .login, user: "a", host: "h", service: "sudo", keyKind: .hardware))
                .allowed)
        XCTAssertNil(snapshot.decide(PolicyRequest(stage: .login, user: "a", host: "h", service: "login")).rule)
    }

    func testRequireProvisionedEKTakesOnlyAKeyOfTheAdminsEK() {
        let ek = String(repeating: "a", count: 64)
        let other = String(repeating: "b", count: 64)
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
        XCTAssertEqual(
            PolicySnapshot(rules: rules).decide(PolicyRequest(stage: .registration, user: "a", host: "h")).summary,
            "deny by rule 1 (require-provisioned-ek): registration users=* hosts=* services=* key=* -> require-provisioned-ek"
        )
    }

    func testRegistrationRulesAndLoginRulesDoNotMix() {
        let rules = [rule(1, .registration, hosts: ["build01"], .deny), rule(2, services: ["sshd"], .deny)]
        let snapshot = PolicySnapshot(rules: rules)
        XCTAssertFalse(snapshot.decide(PolicyRequest(stage: .registration, user: "a", host: "build01")).allowed)
        XCTAssertTrue(
            snapshot.decide(PolicyRequest(stage: .login, user: "a", host: "build01", service: "sudo")).allowed)
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

    func testOfflineGrantsNeedAMatchingRuleAndTakeItsLimitsAndServices() {
        let login = PolicyRequest(stage: .login, user: "alice", host: "laptop7", service: "sudo")
        // No offline rule: no grant, whatever the login rules allow.
        XCTAssertNil(PolicySnapshot(rules: [rule(1, users: ["*"], .allow)]).offlineGrant(for: login))
        XCTAssertEqual(
            PolicySnapshot().decide(PolicyRequest(stage: .offline, user: "alice", host: "h", service: "sudo")),
            PolicyDecision(allowed: false, rule: nil))
        var grants = rule(2, .offline, users: ["list:travellers"], hosts: ["label:laptop"], services: ["sudo"], .allow)
        grants.offline = OfflineLimits(seconds: 72 * 3600, uses: 20)
        let snapshot = PolicySnapshot(rules: [grants], hostLabels: ["laptop"], userLists: ["travellers"])
        let earned = snapshot.offlineGrant(for: login)
        XCTAssertEqual(earned?.limits, OfflineLimits(seconds: 72 * 3600, uses: 20))
        XCTAssertEqual(earned?.services, ["sudo"])
        XCTAssertEqual(earned?.rule, 2)
        XCTAssertNil(
            snapshot.offlineGrant(for: PolicyRequest(stage: .login, user: "alice", host: "laptop7", service: "sshd")))
        XCTAssertNil(
            PolicySnapshot(rules: [grants], hostLabels: ["laptop"], userLists: []).offlineGrant(for: login))
        // A deny first, or a hardware rule for a software key: no grant.
        XCTAssertNil(
            PolicySnapshot(
                rules: [rule(1, .offline, .deny), grants], hostLabels: ["laptop"], userLists: ["travellers"]
            )
            .offlineGrant(for: login))
        var hardware = grants
        hardware.action = .requireHardwareKey
        let tpm = PolicySnapshot(rules: [hardware], hostLabels: ["laptop"], userLists: ["travellers"])
        XCTAssertNil(tpm.offlineGrant(for: login))
        var attested = login
        attested.keyKind = .hardware
        XCTAssertNotNil(tpm.offlineGrant(for: attested))
        XCTAssertEqual(
            grants.summary,
            "offline users=list:travellers hosts=label:laptop services=sudo key=* -> allow hours=72 uses=20")
    }

    func testOfflineRulesFromTextNeedTheirLimitsAndOnlyThey() throws {
        func make(_ stage: String, _ action: String, hours: String?, uses: String?) throws(PolicyRuleText.Problem)
            -> PolicyRule
        {
            try PolicyRuleText.rule(
                stage: stage, users: "alice", hosts: "*", services: nil, key: nil, action: action,
                offlineHours: hours, offlineUses: uses
            ) { "--" + $0 }
        }
        XCTAssertEqual(
            try make("offline", "allow", hours: "8", uses: "3").offline, OfflineLimits(seconds: 28_800, uses: 3))
        XCTAssertNil(try make("offline", "deny", hours: nil, uses: nil).offline)
        let problems: [(String, String, String?, String?, String)] = [
            ("offline", "allow", nil, "3", "an offline rule that grants needs --offline-hours and --offline-uses"),
            ("offline", "allow", "0", "3", "offline hours are 1 to 720"),
            ("offline", "allow", "721", "3", "--offline-hours and --offline-uses are whole numbers"),
            ("offline", "allow", "8", "1001", "offline uses are 1 to 1000"),
            ("offline", "allow", "eight", "3", "--offline-hours and --offline-uses are whole numbers"),
            ("login", "allow", "8", "3", "--offline-hours and --offline-uses belong to an offline rule that grants"),
            ("offline", "deny", "8", nil, "--offline-hours and --offline-uses belong to an offline rule that grants"),
        ]
        for (stage, action, hours, uses, message) in problems {
            XCTAssertThrowsError(try make(stage, action, hours: hours, uses: uses)) { error in
                XCTAssertEqual(
                    (error as? PolicyRuleText.Problem)?.message, message,
                    "\(stage) \(action) \(hours ?? "-") \(uses ?? "-")")
            }
        }
        XCTAssertEqual(OfflineLimits(text: "86400,10"), OfflineLimits(seconds: 86400, uses: 10))
        XCTAssertNil(OfflineLimits(text: "100,10"))
        XCTAssertNil(OfflineLimits(text: "86400"))
    }
}
