import FingerAuthCore

/// One setting of `Options`: its key, its kind (which says how a value is checked: the same
/// check for fingerauth.conf, the pam.d line and the helper's request), how the value is
/// stored and written back, and whether it travels to the login helper in `LoginJob`.
/// Its default is the `Options` property's initial value (`defaultText`).
package struct OptionEntry: Sendable {
    /// What a value must be.
    package enum Kind: Equatable, Sendable {
        /// An absolute path of printable bytes, under 4096 bytes.
        case path
        /// 1 to 256 printable characters.
        case text
        /// A whole number in the range.
        case number(ClosedRange<Int>)
        /// yes, true, on, 1 (or nothing, on the pam.d line) or no, false, off, 0.
        case flag
        /// One of the words.
        case choice([String])
        /// A check of its own (the url, the TCTI).
        case checked
    }

    /// Whether the option goes into the helper's request (`LoginJob.text`).
    package enum Travel: Equatable, Sendable {
        /// Never: the module's or the command line's own setting.
        case stays
        /// Whenever it has a value.
        case travels
        /// Only when its value is not the default (so that requests stay as they were
        /// before the option existed).
        case travelsUnlessDefault
    }

    /// The key in fingerauth.conf, on the pam.d line and in the helper's request.
    package let key: String
    package let kind: Kind
    package let travel: Travel
    /// Stores a value, or returns why it cannot (the message after the key).
    let read: @Sendable (inout Options, String) -> String?
    /// The value as `read` takes it back; nil when unset.
    let write: @Sendable (Options) -> String?

    /// The value in a helper's request; nil when the option is not written there.
    func wireValue(_ options: Options) -> String? {
        switch travel {
        case .stays: return nil
        case .travels: return write(options)
        case .travelsUnlessDefault:
            let value = write(options)
            return value == write(OptionTable.defaults) ? nil : value
        }
    }

    /// The default as text; nil when the option is unset by default.
    package var defaultText: String? { write(OptionTable.defaults) }

    /// True when the option may be in the helper's request.
    package var travelsToHelper: Bool { travel != .stays }

    /// Sets `key` in `options` from `value`, or returns why not.
    package func set(_ options: inout Options, _ value: String) -> String? { read(&options, value) }

    /// The option's value in `options` as text (the form `set` takes); nil when unset.
    package func value(in options: Options) -> String? { write(options) }
}

/// Every key of `Options`, once. Adding a setting is one line here (and its property in
/// `Options`); the configuration parser, the helper's request and `Options`' equality read
/// this table. The options that travel to the helper come first, in the order of the
/// request's lines. `text.NAME` and `claim.NAME` are families of keys, kept in `Options.set`.
package enum OptionTable {
    typealias E = OptionEntry

    package static let entries: [OptionEntry] = [
        E.url("url", .travels),
        E.text("audience", .travels, { $0.audience = $1 }, { $0.audience }),
        E.path("cafile", .travels, { $0.caFile = $1 }, { $0.caFile }),
        E.text("pinned_pubkey", .travels, { $0.pinnedPublicKey = $1 }, { $0.pinnedPublicKey }),
        E.number("timeout", 1...120, .travels, { $0.timeoutSeconds = $1 }, { $0.timeoutSeconds }),
        E.number(
            "approve_timeout", 5...55, .travelsUnlessDefault, { $0.approveTimeoutSeconds = $1 },
            { $0.approveTimeoutSeconds }),
        E.number("max_tries", 1...10, .travels, { $0.maxTries = $1 }, { $0.maxTries }),
        E.number("ttl", 1...300, .travels, { $0.ttlSeconds = $1 }, { $0.ttlSeconds }),
        E.path("state_dir", .travels, { $0.stateDirectory = $1 }, { $0.stateDirectory }),
        E.path("virtual_reader", .travels, { $0.virtualReader = $1 }, { $0.virtualReader }),
        E.flag("allow_http", .travels, { $0.allowHTTP = $1 }, { $0.allowHTTP }),
        E.tcti("tpm_tcti", .travels),
        E.path("virtual_storage_reader", .travels, { $0.virtualStorageReader = $1 }, { $0.virtualStorageReader }),
        E.flag(
            "virtual_reader_removable", .travelsUnlessDefault, { $0.virtualReaderRemovable = $1 },
            { $0.virtualReaderRemovable }),
        E.choice("reader", .travels, "must be libfprint, fprintd or auto", { $0.reader = $1 }, { $0.reader }),
        E.choice("lid", .travels, "must be skip or ignore", { $0.lid = $1 }, { $0.lid }),
        E.path("system_bus", .travels, { $0.systemBus = $1 }, { $0.systemBus }),
        E.path("acpi_lid_dir", .travels, { $0.acpiLidDirectory = $1 }, { $0.acpiLidDirectory }),
        // The module's and the command line's own.
        E.text("host_id", .stays, { $0.hostID = $1 }, { $0.hostID }),
        E.path("login_helper", .stays, { $0.loginHelper = $1 }, { $0.loginHelper }),
        E.path("pam_helper", .stays, { $0.pamHelper = $1 }, { $0.pamHelper }),
        E.path("session_dir", .stays, { $0.sessionDirectory = $1 }, { $0.sessionDirectory }),
        E.path("attempts_dir", .stays, { $0.attemptsDirectory = $1 }, { $0.attemptsDirectory }),
        E.remote("remote"),
        E.choice(
            "approve_callers", .stays, "must be self or any", { $0.approveCallers = $1 }, { $0.approveCallers }),
        E.flag("debug", .stays, { $0.debug = $1 }, { $0.debug }),
        E.path("debug_file", .stays, { $0.debugFile = $1 }, { $0.debugFile }),
        E.flag("disabled", .stays, { $0.disabled = $1 }, { $0.disabled }),
        E.path("token_file", .stays, { $0.tokenFile = $1 }, { $0.tokenFile }),
        E.path("agent_socket", .stays, { $0.agentSocket = $1 }, { $0.agentSocket }),
        E.choice("prompt", .stays, "must be sequential or parallel", { $0.prompt = $1 }, { $0.prompt }),
        E.path("locale_dir", .stays, { $0.localeDirectory = $1 }, { $0.localeDirectory }),
        E.choice("key_store", .stays, "must be tpm, file or auto", { $0.keyStore = $1 }, { $0.keyStore }),
    ]

    /// The entry for `key`; nil for a key that is not a setting (or is a family's).
    package static func entry(_ key: String) -> OptionEntry? {
        for entry in entries where entry.key == key { return entry }
        return nil
    }

    /// `value` when it is a text setting's value (also of `text.NAME` and `claim.NAME`): 1 to
    /// 256 bytes, no control character; nil otherwise.
    static func text(_ value: String) -> String? {
        guard !value.isEmpty, value.utf8.count <= 256,
            value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7f })
        else { return nil }
        return value
    }

    /// The values every login starts from.
    static let defaults = Options()
}

// The kinds, each one check.
extension OptionEntry {
    typealias Store<T> = @Sendable (inout Options, T) -> Void
    typealias Load<T> = @Sendable (Options) -> T

    static func path(_ key: String, _ travel: Travel, _ store: @escaping Store<String>, _ load: @escaping Load<String?>)
        -> OptionEntry
    {
        OptionEntry(
            key: key, kind: .path, travel: travel,
            read: { options, value in
                guard value.hasPrefix("/"), value.utf8.count < 4096,
                    value.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7f })
                else { return "must be an absolute path" }
                store(&options, value)
                return nil
            }, write: load)
    }

    static func text(_ key: String, _ travel: Travel, _ store: @escaping Store<String>, _ load: @escaping Load<String?>)
        -> OptionEntry
    {
        OptionEntry(
            key: key, kind: .text, travel: travel,
            read: { options, value in
                guard let text = OptionTable.text(value) else { return "must be 1 to 256 printable characters" }
                store(&options, text)
                return nil
            }, write: load)
    }

    static func number(
        _ key: String, _ range: ClosedRange<Int>, _ travel: Travel, _ store: @escaping Store<Int>,
        _ load: @escaping Load<Int>
    ) -> OptionEntry {
        OptionEntry(
            key: key, kind: .number(range), travel: travel,
            read: { options, value in
                guard let n = Int(value), range.contains(n) else {
                    return "must be a whole number from \(range.lowerBound) to \(range.upperBound)"
                }
                store(&options, n)
                return nil
            }, write: { "\(load($0))" })
    }

    static func flag(_ key: String, _ travel: Travel, _ store: @escaping Store<Bool>, _ load: @escaping Load<Bool>)
        -> OptionEntry
    {
        OptionEntry(
            key: key, kind: .flag, travel: travel,
            read: { options, value in
                switch value {
                case "", "yes", "true", "1", "on": store(&options, true)
                case "no", "false", "0", "off": store(&options, false)
                default: return "must be yes or no"
                }
                return nil
            }, write: { load($0) ? "yes" : "no" })
    }

    static func choice<Choice: RawRepresentable & CaseIterable & Sendable>(
        _ key: String, _ travel: Travel, _ message: String, _ store: @escaping Store<Choice>,
        _ load: @escaping Load<Choice>
    ) -> OptionEntry where Choice.RawValue == String {
        OptionEntry(
            key: key, kind: .choice(Choice.allCases.map { $0.rawValue }), travel: travel,
            read: { options, value in
                guard let choice = Choice(rawValue: value) else { return message }
                store(&options, choice)
                return nil
            }, write: { load($0).rawValue })
    }

    static func url(_ key: String, _ travel: Travel) -> OptionEntry {
        OptionEntry(
            key: key, kind: .checked, travel: travel,
            read: { options, value in
                switch AuthenticatorURL.parse(value) {
                case let .success(url):
                    options.url = url
                    return nil
                case let .failure(error): return error.message
                }
            }, write: { $0.url?.text })
    }

    static func tcti(_ key: String, _ travel: Travel) -> OptionEntry {
        OptionEntry(
            key: key, kind: .checked, travel: travel,
            read: { options, value in
                guard Options.isValidTCTI(value) else {
                    return "must be a device:, swtpm: or mssim: TCTI string, e.g. device:/dev/tpmrm0"
                }
                options.tpmTCTI = value
                return nil
            }, write: { $0.tpmTCTI })
    }

    /// `remote = allow | deny | approve` (`skip` reads as `deny`).
    static func remote(_ key: String) -> OptionEntry {
        OptionEntry(
            key: key, kind: .choice(["allow", "deny", "skip", "approve"]), travel: .stays,
            read: { options, value in
                switch value {
                case "allow":
                    options.allowRemote = true
                    options.remoteApproval = false
                case "deny", "skip":
                    options.allowRemote = false
                    options.remoteApproval = false
                case "approve":
                    options.allowRemote = false
                    options.remoteApproval = true
                default: return "must be allow, deny or approve"
                }
                return nil
            }, write: { $0.allowRemote ? "allow" : $0.remoteApproval ? "approve" : "deny" })
    }
}
