import FingerAuthCore

/// The line protocol between `pam_fingerauth.so`, inside the PAM host, and `fingerauth-pam`,
/// the process that makes the module's decisions outside it (docs/ARCHITECTURE.md, "The
/// module and fingerauth-pam"). Version 1; lines end in `\n`; every free text is
/// `LineEscape`d. Anything that is not exactly one of these lines ends the exchange: the
/// module denies, `fingerauth-pam` stops.
///
/// The module first writes its request on fingerauth-pam's standard input:
///
///     FINGERAUTH-MODULE 1 AUTH|SESSION
///     FLAGS <pam flags>
///     CALLER <real uid> <effective uid> <pid>   the host's (fingerauth-pam runs with other
///                                       uids, in a session of its own)
///     STARTED <monotonic milliseconds>      when libpam called the module
///     ARG <pam.d argument>                  one line per argument, in order
///     KNOWN <call>                          a question answered in advance, the next line
///     ANSWER <answer>                       its answer (`ModuleKnownAnswer`); any number
///     END
///
/// Then fingerauth-pam asks (`ModuleCall`, on its standard output) and the module answers each
/// call with one line (`ModuleAnswer`) before the next, until `RESULT`, which is not
/// answered: the module returns that code to libpam.
package enum ModuleProtocol {
    static let helloPrefix = "FINGERAUTH-MODULE 1 "
    /// Longest line either side reads (an escaped text of 1 KiB is at most 3 KiB).
    package static let maxLineBytes = 8 * 1024
    /// All the lines fingerauth-pam may write in one exchange (debug lines included).
    package static let maxTotalBytes = 1024 * 1024
    /// The most the module waits for fingerauth-pam's next call after answering one: longer
    /// than any login fingerauth-pam runs (`timeout` at most 120 s, the agent's 180 s).
    package static let callMilliseconds: Int64 = 200_000
    /// The executable's name; the module finds it beside `login_helper`.
    package static let executableName = "fingerauth-pam"
    /// The most `KNOWN` answers a request carries.
    package static let maxKnownAnswers = 16
}

/// What libpam called the module for.
package enum ModuleEntryPoint: String, Equatable, Sendable {
    /// `pam_sm_authenticate`.
    case authenticate = "AUTH"
    /// `pam_sm_open_session`.
    case openSession = "SESSION"
}

/// The module's request: which entry point, with what.
package struct ModuleRequest: Equatable, Sendable {
    package var entry: ModuleEntryPoint
    package var flags: Int32
    /// The host's real and effective uid. fingerauth-pam runs with root as every uid when
    /// the host's effective uid is 0, so it cannot see the caller of a setuid host itself.
    package var realUID: UInt32
    package var effectiveUID: UInt32
    /// The host's process id: fingerauth-pam's parent, whose `/proc` entries (controlling
    /// terminal, audit session, cgroup) are the login's facts.
    package var hostPID: Int32
    /// CLOCK_MONOTONIC milliseconds when libpam called the module (the log line's `ms=`).
    package var started: Int64
    package var arguments: [String]
    /// What every login asks, answered with the request, so that fingerauth-pam does not
    /// ask for each in turn (a round trip between two processes each).
    package var known: [ModuleKnownAnswer]

    package init(
        entry: ModuleEntryPoint, flags: Int32, realUID: UInt32, effectiveUID: UInt32, hostPID: Int32,
        started: Int64, arguments: [String], known: [ModuleKnownAnswer] = []
    ) {
        self.entry = entry
        self.flags = flags
        self.realUID = realUID
        self.effectiveUID = effectiveUID
        self.hostPID = hostPID
        self.started = started
        self.arguments = arguments
        self.known = known
    }

    /// The request's lines, each ending in a newline.
    package var text: String {
        var text = ModuleProtocol.helloPrefix + entry.rawValue + "\n"
        text += "FLAGS \(flags)\nCALLER \(realUID) \(effectiveUID) \(hostPID)\nSTARTED \(started)\n"
        for argument in arguments { text += "ARG " + LineEscape.encode(argument) + "\n" }
        for answered in known { text += "KNOWN " + answered.call.line + "\nANSWER " + answered.answer.line + "\n" }
        return text + "END\n"
    }

    /// Reads the request, a line at a time from `nextLine` (nil: no more lines); nil for
    /// anything but exactly the lines `text` writes, more than `maxArguments` arguments or
    /// more than `maxKnownAnswers` known answers, or a known answer to a call that is not
    /// a question (`ModuleKnownAnswer`).
    package static func read(maxArguments: Int, _ nextLine: () -> String?) -> ModuleRequest? {
        guard let first = nextLine(), first.hasPrefix(ModuleProtocol.helloPrefix),
            let entry = ModuleEntryPoint(rawValue: String(first.dropFirst(ModuleProtocol.helloPrefix.utf8.count))),
            let flags = nextLine().flatMap({ field($0, "FLAGS ") }).flatMap({ Int32($0) }),
            let caller = nextLine().flatMap({ field($0, "CALLER ") })?.split(separator: " "), caller.count == 3,
            let realUID = UInt32(caller[caller.startIndex]), let effectiveUID = UInt32(caller[caller.startIndex + 1]),
            let hostPID = Int32(caller[caller.startIndex + 2]), hostPID > 0,
            let started = nextLine().flatMap({ field($0, "STARTED ") }).flatMap({ Int64($0) })
        else { return nil }
        var arguments: [String] = []
        var known: [ModuleKnownAnswer] = []
        while let line = nextLine() {
            if line == "END" {
                return ModuleRequest(
                    entry: entry, flags: flags, realUID: realUID, effectiveUID: effectiveUID, hostPID: hostPID,
                    started: started, arguments: arguments, known: known)
            }
            if let call = field(line, "KNOWN ") {
                guard known.count < ModuleProtocol.maxKnownAnswers,
                    let answered = ModuleKnownAnswer(
                        call: String(call), answer: nextLine().flatMap { field($0, "ANSWER ") })
                else { return nil }
                known.append(answered)
                continue
            }
            // The arguments come first, then the known answers.
            guard known.isEmpty, arguments.count < maxArguments, let escaped = field(line, "ARG "),
                let argument = LineEscape.decode(escaped)
            else { return nil }
            arguments.append(argument)
        }
        return nil
    }
}

/// A question of fingerauth-pam's with the module's answer, sent with the request. Only
/// questions that change nothing in the host and have one answer for the whole call may be
/// answered in advance: a PAM item, the user already set (`USER` then does not prompt), the
/// host's user database, the SSH variables, the language, the terminal. Messages, prompts,
/// `AUTHTOK` and log lines are always asked in turn.
package struct ModuleKnownAnswer: Equatable, Sendable {
    package let call: ModuleCall
    package let answer: ModuleAnswer

    /// Nil when `call` is not such a question.
    package init?(_ call: ModuleCall, _ answer: ModuleAnswer) {
        switch call {
        case .item, .user, .uid, .name, .sshVariables, .locale, .terminal: break
        case .info, .error, .secret, .handOnSecret, .log, .result: return nil
        }
        self.call = call
        self.answer = answer
    }

    init?(call: String, answer: Substring?) {
        guard let call = ModuleCall(line: call), let answer = answer.flatMap({ ModuleAnswer(line: String($0)) })
        else { return nil }
        self.init(call, answer)
    }
}

/// A PAM string item fingerauth-pam may ask for.
package enum ModuleItem: String, Equatable, Sendable {
    case service = "SERVICE"
    case tty = "TTY"
    case remoteHost = "RHOST"
    /// `PAM_RUSER`: who the application says asks (su and sudo set it to their caller).
    case remoteUser = "RUSER"
}

/// What fingerauth-pam asks the module to do or tell, one line each.
package enum ModuleCall: Equatable, Sendable {
    /// `ITEM <name>`: pam_get_item → `VALUE <text>` or `NONE`.
    case item(ModuleItem)
    /// `USER`: pam_get_user (which may prompt) → `VALUE <name>` or `FAIL <pam code>`.
    case user
    /// `UID <name>`: the host's user database (getpwnam_r, through the host's NSS) → `VALUE
    /// <uid>` or `NONE`.
    case uid(of: String)
    /// `NAME <uid>`: the host's user database (getpwuid_r) → `VALUE <name>` or `NONE`.
    case name(of: UInt32)
    /// `SSH`: is one of SSH_CONNECTION, SSH_CLIENT, SSH_TTY set in the PAM or the host's
    /// environment → `OK` (set) or `NONE`.
    case sshVariables
    /// `LOCALE`: the caller's LC_ALL, LC_MESSAGES or LANG (the first set), when it is a
    /// plain locale name → `VALUE <name>` or `NONE`.
    case locale
    /// `TERMINAL`: the caller's own terminal for `prompt = parallel` (`PAM_TTY`, standard
    /// input and the session's controlling terminal agree) → `VALUE <device> <path>` or `NONE`.
    case terminal
    /// `INFO <text>`, `ERROR <text>`: a PAM_TEXT_INFO / PAM_ERROR_MSG → `OK` or `FAIL <code>`.
    case info(String)
    case error(String)
    /// `SECRET <text>`: one echo-off prompt; the module keeps the answer → `EMPTY`, `GIVEN`
    /// or `FAIL <code>`. The answer itself never leaves the host.
    case secret(String)
    /// `AUTHTOK`: the kept answer becomes PAM_AUTHTOK → `OK` or `FAIL <code>`.
    case handOnSecret
    /// `LOG <priority> <text>`: one pam_syslog line (LOG_AUTHPRIV) → `OK`.
    case log(priority: Int32, text: String)
    /// `RESULT <pam code>`: the module returns this code. Not answered.
    case result(PAMCode)

    package var line: String {
        switch self {
        case let .item(item): return "ITEM " + item.rawValue
        case .user: return "USER"
        case let .uid(name): return "UID " + LineEscape.encode(name)
        case let .name(uid): return "NAME \(uid)"
        case .sshVariables: return "SSH"
        case .locale: return "LOCALE"
        case .terminal: return "TERMINAL"
        case let .info(text): return "INFO " + LineEscape.encode(text)
        case let .error(text): return "ERROR " + LineEscape.encode(text)
        case let .secret(text): return "SECRET " + LineEscape.encode(text)
        case .handOnSecret: return "AUTHTOK"
        case let .log(priority, text): return "LOG \(priority) " + LineEscape.encode(text)
        case let .result(code): return "RESULT \(code.rawValue)"
        }
    }

    package init?(line: String) {
        let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        let word = parts.first ?? ""
        let rest = parts.count == 2 ? parts.last : nil
        switch (word, rest) {
        case ("ITEM", let name?):
            guard let item = ModuleItem(rawValue: String(name)) else { return nil }
            self = .item(item)
        case ("USER", nil): self = .user
        case ("UID", let name?):
            guard let name = LineEscape.decode(name) else { return nil }
            self = .uid(of: name)
        case ("NAME", let uid?):
            guard let uid = UInt32(uid) else { return nil }
            self = .name(of: uid)
        case ("SSH", nil): self = .sshVariables
        case ("LOCALE", nil): self = .locale
        case ("TERMINAL", nil): self = .terminal
        case ("INFO", let text?):
            guard let text = LineEscape.decode(text) else { return nil }
            self = .info(text)
        case ("ERROR", let text?):
            guard let text = LineEscape.decode(text) else { return nil }
            self = .error(text)
        case ("SECRET", let text?):
            guard let text = LineEscape.decode(text) else { return nil }
            self = .secret(text)
        case ("AUTHTOK", nil): self = .handOnSecret
        case ("LOG", let fields?):
            let split = fields.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard split.count == 2, let first = split.first, let last = split.last, let priority = Int32(first),
                (0...7).contains(priority), let text = LineEscape.decode(last)
            else { return nil }
            self = .log(priority: priority, text: text)
        case ("RESULT", let code?):
            guard let value = Int32(code), PAMCode.moduleResults.contains(value) else { return nil }
            self = .result(PAMCode(rawValue: value))
        default: return nil
        }
    }
}

/// The module's answer to one `ModuleCall`.
package enum ModuleAnswer: Equatable, Sendable {
    case value(String)
    case none
    case ok
    case failed(PAMCode)
    /// The secret prompt's answer was an empty line.
    case empty
    /// The secret prompt's answer was not empty.
    case given

    package var line: String {
        switch self {
        case let .value(text): return "VALUE " + LineEscape.encode(text)
        case .none: return "NONE"
        case .ok: return "OK"
        case let .failed(code): return "FAIL \(code.rawValue)"
        case .empty: return "EMPTY"
        case .given: return "GIVEN"
        }
    }

    package init?(line: String) {
        switch line {
        case "NONE": self = .none
        case "OK": self = .ok
        case "EMPTY": self = .empty
        case "GIVEN": self = .given
        default:
            if let escaped = field(line, "VALUE "), let text = LineEscape.decode(escaped) {
                self = .value(text)
            } else if let code = field(line, "FAIL ").flatMap({ Int32($0) }) {
                self = .failed(PAMCode(rawValue: code))
            } else {
                return nil
            }
        }
    }
}

extension PAMCode {
    /// The codes fingerauth-pam may have the module return; `RESULT` with any other is refused.
    package static let moduleResults: [Int32] = [
        PAMCode.success, .serviceError, .systemError, .authError, .authInfoUnavailable, .userUnknown, .maxTries,
        .conversationError, .ignore,
    ].map { $0.rawValue }
}

/// The rest of `line` after `prefix`, or nil when it does not start with it.
private func field(_ line: String, _ prefix: String) -> Substring? {
    line.hasPrefix(prefix) ? line.dropFirst(prefix.utf8.count) : nil
}
