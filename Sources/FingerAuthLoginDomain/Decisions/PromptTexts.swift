import FingerAuthCore

/// Every text the person at the keyboard sees from the module, by name. Each one is, in
/// this order: the configuration's `text.NAME.SERVICE`, its `text.NAME`, the translation of
/// the English text into the caller's language (gettext, domain `fingerauth`, in the
/// module), or the English text. `{service}` in a text becomes the PAM service, `{left}`
/// the tries left, `{expires}` the end of an offline grant.
package enum TextName: String, CaseIterable, Sendable {
    case placeFinger = "place_finger"
    case passwordOrFinger = "password_or_finger"
    case noMatch = "no_match"
    case tooManyTries = "too_many_tries"
    case readerUnavailable = "reader_unavailable"
    case authenticatorUnavailable = "authenticator_unavailable"
    case refused
    case policyDenied = "policy_denied"
    case tooManyAttempts = "too_many_attempts"
    case offlineLogin = "offline_login"
    case approvalPrompt = "approval_prompt"
    case approvalPromptEnter = "approval_prompt_enter"
    case approvalDenied = "approval_denied"
    case approvalTimedOut = "approval_timed_out"
    case approvalHeld = "approval_held"

    /// The English text, which is also the gettext msgid.
    package var english: String {
        switch self {
        case .placeFinger: return LoginTexts.placeFinger
        case .passwordOrFinger: return LoginTexts.passwordOrFinger
        case .noMatch: return "No match, try again ({left} left)"
        case .tooManyTries: return LoginTexts.tooManyTries
        case .readerUnavailable: return LoginTexts.readerUnavailable
        case .authenticatorUnavailable: return LoginTexts.authenticatorUnavailable
        case .refused: return LoginTexts.refused
        case .policyDenied: return LoginTexts.policyDenied
        case .tooManyAttempts: return LoginTexts.tooManyAttempts
        case .offlineLogin: return LoginTexts.offlineLogin
        case .approvalPrompt:
            return "Touch the reader on {workstation} (code {code}) \u{2014} Enter to wait, or type your password: "
        case .approvalPromptEnter:
            return "Touch the reader on {workstation} (code {code}), then press Enter \u{2014} or type your password: "
        case .approvalDenied: return "Not approved: \"Not me\" on your workstation"
        case .approvalTimedOut: return "Not approved in time on your workstation"
        case .approvalHeld:
            return "Remote approval unavailable: another request is pending, or a recent \"Not me\" holds them back"
        }
    }
}

/// Translates an English text (a msgid) into the caller's language; the text itself when
/// there is no translation.
package protocol Translator {
    func translate(_ msgid: String) -> String
}

/// The texts for one login: the options' replacements, the service, the translation.
package struct PromptTexts {
    package let options: Options
    package let service: String
    /// An English text (the msgid) in the caller's language.
    package let translate: (String) -> String

    /// The texts of a login for `service` with these options and this translation.
    package init(options: Options, service: String, translate: @escaping (String) -> String = { $0 }) {
        self.options = options
        self.service = service
        self.translate = translate
    }

    /// The text `name` for this login, `{service}` and `{left}` filled in.
    package func text(
        _ name: TextName, left: Int = 0, expires: String = "", workstation: String = "", code: String = ""
    ) -> String {
        let chosen =
            options.texts[name.rawValue + "." + service] ?? options.texts[name.rawValue]
            ?? translate(name.english)
        return chosen.replacingAll("{service}", with: ServiceName.claim(service)).replacingAll(
            "{left}", with: String(left)
        )
        .replacingAll("{expires}", with: expires).replacingAll("{workstation}", with: workstation)
        .replacingAll("{code}", with: code)
    }
}
