import FingerAuthCore

/// A policy rule from what an admin typed — `fingerauthd policy add`'s options or the
/// console's form — checked the same way for both: comma-separated patterns, a known stage,
/// action and key kind, user names that can exist, no services on a registration rule.
package enum PolicyRuleText {
    /// Why the text is not a rule, phrased with the caller's names for the fields
    /// (`--users` on the command line, `users` in the console).
    package struct Problem: Error, Sendable, Equatable {
        package var message: String
    }

    /// The rule, or the first problem. `field` turns a field's name (`stage`, `users`,
    /// `hosts`, `services`, `key`, `action`) into the caller's; `services` and `key` nil or
    /// empty mean `*`.
    /// `offlineHours` and `offlineUses` are an `offline` rule's limits: required when it
    /// grants (any action but deny), refused on every other rule.
    package static func rule(
        stage: String, users: String, hosts: String, services: String?, key: String?,
        action: String, offlineHours: String? = nil, offlineUses: String? = nil,
        field: (String) -> String
    ) throws(Problem) -> PolicyRule {
        guard let stageValue = PolicyStage(rawValue: stage) else {
            throw Problem(message: "\(field("stage")) is login, registration, offline or approve")
        }
        guard let actionValue = PolicyAction(rawValue: action) else {
            throw Problem(message: "\(field("action")) is allow, deny, require-hardware-key or require-provisioned-ek")
        }
        let userPatterns = try patterns(users, field: field("users"))
        let hostPatterns = try patterns(hosts, field: field("hosts"))
        let servicePatterns = try patterns(services.flatMap { $0.isEmpty ? nil : $0 } ?? "*", field: field("services"))
        if stageValue == .registration && servicePatterns != ["*"] {
            throw Problem(message: "a registration rule has no services; leave \(field("services")) out")
        }
        for user in userPatterns where !user.hasPrefix("list:") && user != "*" {
            if let problem = UserName.problem(user) {
                throw Problem(
                    message:
                        "\(field("users")): '\(LogText.clean(user, limit: 64))' is not a user name (\(problem); \(UserName.rule))"
                )
            }
        }
        var kind: KeyKind?
        if let key, !key.isEmpty, key != "*" {
            guard let value = KeyKind(rawValue: key) else {
                throw Problem(message: "\(field("key")) is software, hardware or *")
            }
            kind = value
        }
        let hours = offlineHours.flatMap { $0.isEmpty ? nil : $0 }
        let uses = offlineUses.flatMap { $0.isEmpty ? nil : $0 }
        var offline: OfflineLimits?
        if stageValue == .offline && actionValue != .deny {
            guard let hours, let uses else {
                throw Problem(
                    message: "an offline rule that grants needs \(field("offline-hours")) and \(field("offline-uses"))")
            }
            guard let hourCount = Int64(hours), let useCount = Int(uses), hourCount <= OfflineGrant.maxTTLSeconds / 3600
            else {
                throw Problem(message: "\(field("offline-hours")) and \(field("offline-uses")) are whole numbers")
            }
            let limits = OfflineLimits(seconds: hourCount * 3600, uses: useCount)
            if let problem = limits.problem { throw Problem(message: problem) }
            offline = limits
        } else if hours != nil || uses != nil {
            throw Problem(
                message: "\(field("offline-hours")) and \(field("offline-uses")) belong to an offline rule that grants")
        }
        return PolicyRule(
            stage: stageValue, users: userPatterns, hosts: hostPatterns, services: servicePatterns,
            keyKind: kind, action: actionValue, offline: offline)
    }

    /// `text` split at commas into patterns `PolicyRule.problem(in:field:)` accepts.
    package static func patterns(_ text: String, field: String) throws(Problem) -> [String] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        if let problem = PolicyRule.problem(in: parts, field: field) { throw Problem(message: problem) }
        return parts
    }
}
