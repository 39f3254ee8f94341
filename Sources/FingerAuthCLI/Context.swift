import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthSystem
import FingerAuthTPM

#if canImport(Glibc)
import Glibc
#endif

/// What every command needs: the options (defaults, config file, command-line overrides),
/// the user it acts for, and the paths of that user's state.
struct Context {
    var options: Options
    var configPath: String
    let user: String

    static let commonOptions: Set<String> = ["config", "state-dir", "user"]

    /// `--config` (default /etc/security/fingerauth.conf), then `--state-dir`, then the user:
    /// `--user`, else `$SUDO_USER` when run through sudo, else the caller.
    init(_ args: CommandArguments, requireURL: Bool) throws(CommandError) {
        configPath = args["config"] ?? Options.defaultConfigPath
        options = try Context.loadOptions(args, requireURL: requireURL)
        let name = args["user"] ?? Context.invokingUser()
        guard let name, UserName.isValid(name) else {
            let why = name.flatMap(UserName.problem).map { ": \($0); FingerAuth takes \(UserName.rule)" } ?? ""
            throw CommandError("\(args["user"].map { "'\($0)'" } ?? "the calling user") is not a valid user name\(why)")
        }
        guard SystemUserDatabase().exists(name) else {
            throw CommandError("no such user: \(name) (check the name, or create the account first)")
        }
        user = name
    }

    /// The options: defaults, then `--config` (default /etc/security/fingerauth.conf; a
    /// missing default file is fine, a missing named one is not), then `--state-dir`.
    static func loadOptions(_ args: CommandArguments, requireURL: Bool) throws(CommandError) -> Options {
        let configPath = args["config"] ?? Options.defaultConfigPath
        var options: Options
        do {
            let named = args["config"] != nil
            options = try OptionsLoader.load(
                arguments: named ? ["conf=" + configPath] : [], requireURL: requireURL,
                unprivilegedPortStart: KernelSettings.unprivilegedPortStart(),
                readFile: ConfigurationFile.read)
        } catch {
            let text = "\(error)"
            throw CommandError(
                "configuration: "
                    + (text.contains("fix:") ? text : text + " (fix it in \(configPath); the keys: fingerauth.conf(5))")
            )
        }
        if let dir = args["state-dir"] {
            do { try options.set("state_dir", dir, source: "--state-dir") } catch { throw CommandError("\(error)") }
        }
        return options
    }

    /// `--user`, else `$SUDO_USER` under sudo, else the caller; nil when not a valid name.
    static func defaultUser(_ args: CommandArguments) -> String? {
        guard let name = args["user"] ?? invokingUser(), UserName.isValid(name) else { return nil }
        return name
    }

    var paths: StatePaths { StatePaths(root: options.stateDirectory, user: user) }

    /// Refuses to go on unless running as root, saying how to run it instead.
    static func requireRoot(_ command: String) throws(CommandError) {
        guard geteuid() == 0 else {
            throw CommandError(
                "fingerauth \(command) must run as root: it reads and writes root-only files "
                    + "under the state directory (try: sudo fingerauth \(command))")
        }
    }

    private static func invokingUser() -> String? {
        sudoUser() ?? SystemUserDatabase().name(of: UInt32(getuid()))
    }

    /// `$SUDO_USER` when running as root (empty counts as unset): who ran sudo.
    static func sudoUser() -> String? {
        guard geteuid() == 0, let sudo = getenv("SUDO_USER"), sudo.pointee != 0 else { return nil }
        return String(cString: sudo)
    }

    /// Creates `<state_dir>/users/<user>/prints` (user and prints directories root 0700).
    func makeUserDirectories() throws(CommandError) {
        do {
            try SafeFile.makeDirectory(paths.usersDirectory, mode: 0o755)
            try SafeFile.makeDirectory(paths.userDirectory, mode: 0o700)
            try SafeFile.makeDirectory(paths.printsDirectory, mode: 0o700)
        } catch {
            throw CommandError("cannot create the state directory: \(error)")
        }
    }

    /// The device key, or an error saying how to make one.
    func loadDeviceKey() throws(CommandError) -> DeviceKey {
        guard SafeFile.exists(paths.deviceKey) else {
            throw CommandError("\(user) has no device key (create one: fingerauth key create --user \(user))")
        }
        switch DeviceKeyLoader(tcti: options.tpmTCTI).load(paths.deviceKey) {
        case let .success(key): return key
        case let .failure(e): throw CommandError("device key: \(e.message)")
        }
    }
}

/// Writes a line to standard output and flushes it, so progress shows at once
/// (`fflush(nil)` flushes every stream: C's `stdout` is a global Swift 6 code may not read).
func say(_ text: String) {
    print(text)
    fflush(nil)
}
