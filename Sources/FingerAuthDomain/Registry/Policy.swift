import FingerAuthCore

/// The authenticator's central policy: ordered rules, first match wins, that say who may
/// register a key on which hosts and who may log in with one where, by user (name, user
/// list, `*`), host (name, label, `*`), PAM service (name, `*`) and key kind. When no rule
/// matches, the answer is allow (the behaviour before there was a policy); an admin who
/// wants the opposite adds a last rule `deny` for `*`. Offline grants are the exception:
/// no matching `offline` rule means no grant.

/// Which of the two kinds of request a rule is for.
package enum PolicyStage: String, Sendable, CaseIterable {
    /// `POST /v1/keys`: who may register a key on which hosts (services do not apply).
    case registration
    /// A login token (`/v1/login`, `/login`, the `/oauth2/token` grant).
    case login
    /// Whether an accepted login at `/v1/login` also gets an offline grant, and its limits
    /// (`OfflineLimits`). Unlike the other stages, no matching rule means no grant.
    case offline
    /// Who may approve, on their workstation, a login to which host's services (remote
    /// approval: `POST /v1/approvals` and the decision). Like `offline`, no matching rule
    /// means no: remote approval is off until a rule allows it.
    case approve
}

/// How long and how often an offline grant may be used: an `offline` rule's limits.
package struct OfflineLimits: Sendable, Equatable {
    /// The grant's lifetime from its issue, seconds (1 hour to 30 days, whole hours).
    package var seconds: Int64
    /// How many offline logins it allows (1 to 1,000).
    package var uses: Int

    package init(seconds: Int64, uses: Int) {
        self.seconds = seconds
        self.uses = uses
    }

    /// Why these limits cannot be stored, or nil.
    package var problem: String? {
        guard seconds >= 3600, seconds <= OfflineGrant.maxTTLSeconds, seconds % 3600 == 0 else {
            return "offline hours are 1 to \(OfflineGrant.maxTTLSeconds / 3600)"
        }
        guard uses >= 1, uses <= OfflineGrant.maxUses else { return "offline uses are 1 to \(OfflineGrant.maxUses)" }
        return nil
    }

    /// `86400,10`: the stored form.
    package var text: String { "\(seconds),\(uses)" }

    package init?(text: String) {
        let parts = text.split(separator: ",")
        guard parts.count == 2, let seconds = Int64(parts[0]), let uses = Int(parts[1]) else { return nil }
        self.init(seconds: seconds, uses: uses)
        guard problem == nil else { return nil }
    }
}

/// What a matching rule decides.
package enum PolicyAction: String, Sendable, CaseIterable {
    case allow
    case deny
    /// Allow a key held in attested hardware; refuse a software key.
    case requireHardwareKey = "require-hardware-key"
    /// Allow only a key attested by the EK an admin provisioned for the request's host
    /// (`fingerauthd hosts add-ek`); refuse software keys and keys of a host whose EK was
    /// only pinned on first use (or not at all).
    case requireProvisionedEK = "require-provisioned-ek"
}

/// The kind of key a request is signed with. Every key is `software` until TPM-held keys are
/// attested at registration.
package enum KeyKind: String, Sendable, CaseIterable {
    case software
    case hardware
}

/// One rule as stored. `users`, `hosts` and `services` are lists of patterns: `*` matches
/// everything; `list:NAME` (users) a member of the user list NAME; `label:NAME` (hosts) a
/// host carrying the label NAME; anything else is an exact, case-sensitive name.
package struct PolicyRule: Sendable, Equatable {
    /// Stable id, never reused (the audit row of a refusal names it).
    package var id: Int64
    /// 1-based place in the order of evaluation, among the rules of every stage.
    package var position: Int
    package var stage: PolicyStage
    package var users: [String]
    package var hosts: [String]
    package var services: [String]
    /// nil: any kind.
    package var keyKind: KeyKind?
    package var action: PolicyAction
    /// An `offline` rule that grants: the grant's limits; nil for every other rule.
    package var offline: OfflineLimits?

    package init(
        id: Int64 = 0, position: Int = 0, stage: PolicyStage, users: [String], hosts: [String],
        services: [String] = ["*"], keyKind: KeyKind? = nil, action: PolicyAction,
        offline: OfflineLimits? = nil
    ) {
        self.offline = offline
        self.id = id
        self.position = position
        self.stage = stage
        self.users = users
        self.hosts = hosts
        self.services = services
        self.keyKind = keyKind
        self.action = action
    }

    /// `login users=alice,list:dba hosts=label:db services=sudo key=* -> allow`: the form
    /// `policy list` prints and the audit rows of changes keep.
    package var summary: String {
        "\(stage.rawValue) users=\(users.joined(separator: ",")) hosts=\(hosts.joined(separator: ","))"
            + " services=\(services.joined(separator: ",")) key=\(keyKind?.rawValue ?? "*") -> \(action.rawValue)"
            + (offline.map { " hours=\($0.seconds / 3600) uses=\($0.uses)" } ?? "")
    }

    /// Why `patterns` cannot be stored, or nil: empty lists, empty names, separators.
    package static func problem(in patterns: [String], field: String) -> String? {
        guard !patterns.isEmpty else { return "\(field): at least one name, list:NAME, label:NAME or *" }
        for pattern in patterns {
            let bytes = Array(pattern.utf8)
            guard !bytes.isEmpty, bytes.count <= 128 else { return "\(field): names are 1 to 128 characters" }
            guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: ",") }) else {
                return "\(field): '\(pattern)' has a space, a comma or a character outside printable ASCII"
            }
            for prefix in ["list:", "label:"] where pattern.hasPrefix(prefix) && pattern.utf8.count == prefix.utf8.count
            {
                return "\(field): '\(pattern)' names no \(prefix.dropLast())"
            }
        }
        return nil
    }
}

/// What one decision needs, read in one statement (one snapshot of the database): every
/// rule, the labels of the request's host and the lists its user is in. A rule change that
/// commits is seen whole by the next request, or not at all.
package struct PolicySnapshot: Sendable, Equatable {
    package var rules: [PolicyRule]
    package var hostLabels: Set<String>
    package var userLists: Set<String>
    /// The EK an admin provisioned for the request's host; nil when it has none, or only a
    /// pin on first use.
    package var provisionedEK: String?

    package init(
        rules: [PolicyRule] = [], hostLabels: Set<String> = [], userLists: Set<String> = [],
        provisionedEK: String? = nil
    ) {
        self.rules = rules.sorted { $0.position < $1.position }
        self.hostLabels = hostLabels
        self.userLists = userLists
        self.provisionedEK = provisionedEK
    }
}

/// A request as the policy sees it.
package struct PolicyRequest: Sendable, Equatable {
    package var stage: PolicyStage
    package var user: String
    package var host: String
    /// The PAM service of a login; nil for a registration.
    package var service: String?
    package var keyKind: KeyKind
    /// The EK that attested the key (`EndorsementKeyID`); nil for a software key or one
    /// attested before EKs were recorded.
    package var ek: String?

    package init(
        stage: PolicyStage, user: String, host: String, service: String? = nil, keyKind: KeyKind = .software,
        ek: String? = nil
    ) {
        self.stage = stage
        self.user = user
        self.host = host
        self.service = service
        self.keyKind = keyKind
        self.ek = ek
    }
}

/// The answer and the rule that gave it (nil: no rule matched, allowed by default).
package struct PolicyDecision: Sendable, Equatable {
    package var allowed: Bool
    package var rule: PolicyRule?

    package init(allowed: Bool, rule: PolicyRule?) {
        self.allowed = allowed
        self.rule = rule
    }

    /// `allow by rule 3`, `deny by rule 2 (require-hardware-key, software key)`, `allow (no rule matched)`.
    package var summary: String {
        guard let rule else {
            return allowed ? "allow (no rule matched: the default)" : "no offline grant (no offline rule matched)"
        }
        let verdict = (allowed ? PolicyAction.allow : .deny).rawValue
        let why = rule.action == .allow || rule.action == .deny ? "" : " (\(rule.action.rawValue))"
        return "\(verdict) by rule \(rule.id)\(why): \(rule.summary)"
    }
}

extension PolicySnapshot {
    /// The first rule of `request.stage` that matches decides; none matching allows, but for
    /// the `offline` stage, where none matching gives no grant.
    package func decide(_ request: PolicyRequest) -> PolicyDecision {
        for rule in rules where rule.stage == request.stage && matches(rule, request) {
            switch rule.action {
            case .allow: return PolicyDecision(allowed: true, rule: rule)
            case .deny: return PolicyDecision(allowed: false, rule: rule)
            case .requireHardwareKey: return PolicyDecision(allowed: request.keyKind == .hardware, rule: rule)
            case .requireProvisionedEK:
                let provisioned = request.keyKind == .hardware && request.ek != nil && request.ek == provisionedEK
                return PolicyDecision(allowed: provisioned, rule: rule)
            }
        }
        return PolicyDecision(allowed: request.stage != .offline && request.stage != .approve, rule: nil)
    }

    /// The offline grant `request` (a login) earns: the first matching `offline` rule's
    /// limits and services when it allows, nil otherwise (also when no rule matches).
    package func offlineGrant(for request: PolicyRequest) -> (limits: OfflineLimits, services: [String], rule: Int64)? {
        var offline = request
        offline.stage = .offline
        let decision = decide(offline)
        guard decision.allowed, let rule = decision.rule, let limits = rule.offline else { return nil }
        return (limits, rule.services, rule.id)
    }

    private func matches(_ rule: PolicyRule, _ request: PolicyRequest) -> Bool {
        if let kind = rule.keyKind, kind != request.keyKind { return false }
        let userMatches = rule.users.contains { pattern in
            if pattern == "*" { return true }
            if pattern.hasPrefix("list:") { return userLists.contains(String(pattern.dropFirst(5))) }
            return pattern == request.user
        }
        let hostMatches = rule.hosts.contains { pattern in
            if pattern == "*" { return true }
            if pattern.hasPrefix("label:") { return hostLabels.contains(String(pattern.dropFirst(6))) }
            return pattern == request.host
        }
        // A registration has no service: only rules for every service apply to it.
        let serviceMatches = rule.services.contains { $0 == "*" || $0 == request.service }
        return userMatches && hostMatches && serviceMatches
    }
}

/// A change to the policy, made by an admin command in one transaction with its audit row.
package enum PolicyChange: Sendable, Equatable {
    /// Adds `rule` at `position` (1-based; nil: last); later rules move down.
    case addRule(PolicyRule, position: Int?)
    case removeRule(id: Int64)
    /// Moves rule `id` to `position` (1-based, clamped to the number of rules).
    case moveRule(id: Int64, position: Int)
    /// Gives `host` the `labels` (the host must have an enrollment token).
    case label(host: String, labels: [String])
    /// Takes `labels` (nil: every label) from `host`.
    case unlabel(host: String, labels: [String]?)
    /// Puts `users` into the user list `list`.
    case addUsers(list: String, users: [String])
    /// Takes `users` (nil: every member, the list goes) out of `list`.
    case removeUsers(list: String, users: [String]?)
}

/// How a change ended.
package enum PolicyChangeResult: Sendable, Equatable {
    /// Done: the rule added (for `addRule`) and what the policy said before and after, for
    /// the audit row and the command's output.
    case changed(rule: PolicyRule?, before: String, after: String)
    case unknownRule
    /// `label` for a host without an enrollment token.
    case unknownHost
    /// Nothing to take away (no such label or member).
    case nothingToRemove
}

/// The order of rules after a change: both stores renumber 1…n with it.
package enum PolicyOrder {
    /// `ids` in their current order, with `moving` put at `position` (1-based, clamped).
    package static func moving(_ moving: Int64, to position: Int, in ids: [Int64]) -> [Int64] {
        var order = ids.filter { $0 != moving }
        let index = min(max(position, 1), order.count + 1) - 1
        order.insert(moving, at: index)
        return order
    }
}

extension PolicyChangeResult {
    /// The audit row of `change`: outcome, reason (`before -> after`, or why nothing changed,
    /// after the base row's own reason — who made the change) and the rule it touched.
    package func audit(_ base: AuditEvent, _ change: PolicyChange) -> AuditEvent {
        var event = base
        let what: AuditReason
        switch self {
        case let .changed(rule, before, after):
            event.outcome = .accept
            what = .detail("\(before.isEmpty ? "(none)" : before) -> \(after.isEmpty ? "(none)" : after)")
            event.rule = rule?.id
        case .unknownRule, .unknownHost, .nothingToRemove:
            event.outcome = .deny
            what = .code(self == .unknownRule ? .unknownRule : self == .unknownHost ? .unknownHost : .nothingToRemove)
        }
        // After the base row's own reason (who made the change), as one text.
        event.reason = base.reason.map { AuditReason(text: "\($0.text): \(what.text)") } ?? what
        if case let .removeRule(id) = change { event.rule = id }
        if case let .moveRule(id, _) = change { event.rule = id }
        return event
    }
}
