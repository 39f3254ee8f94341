import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem
import FingerAuthTPM

#if canImport(Glibc)
import Glibc
#endif

/// The checks of `fingerauth status` that look at this host only.
enum LocalChecks {
    static func config(_ context: Context) -> StatusCheck {
        guard let url = context.options.url else {
            let where_ =
                SafeFile.exists(context.configPath) ? context.configPath : "\(context.configPath) (does not exist)"
            return .fail(
                "config", "\(where_): url is not set",
                fix: "write url = https://<authenticator>/v1/login into \(context.configPath) (root, mode 644)")
        }
        do {
            _ = try context.options.validated(
                source: context.configPath,
                unprivilegedPortStart: KernelSettings.unprivilegedPortStart())
        } catch {
            return .fail("config", "\(error)", fix: "correct that key in \(context.configPath)")
        }
        if context.options.disabled {
            return .fail(
                "config", "\(context.configPath): disabled = yes, the module does nothing",
                fix: "remove disabled from \(context.configPath)")
        }
        let file =
            SafeFile.exists(context.configPath)
            ? "\(context.configPath) readable, root-owned, not writable by others"
            : "\(context.configPath) absent, options from the command line"
        return .pass("config", "\(file); url \(url.text)")
    }

    /// fingerauth-pam, which the module starts for each call: without it every login falls
    /// to the password.
    static func pamHelper(_ options: Options) -> StatusCheck {
        trustedProgram("pam-helper", options.pamHelper, installing: "fingerauth-pam", key: "pam_helper")
    }

    static func loginHelper(_ options: Options) -> StatusCheck {
        trustedProgram("login-helper", options.loginHelper, installing: "fingerauth-login", key: "login_helper")
    }

    /// A program the module's side starts as root: the check `TrustedExecutable` makes.
    private static func trustedProgram(_ name: String, _ path: String, installing: String, key: String)
        -> StatusCheck
    {
        if case let .failure(problem) = TrustedExecutable.open(path) {
            return .fail(
                name, problem.description,
                fix: "install \(installing) there, root-owned, mode 755, in root-owned directories "
                    + "not writable by others (or set \(key) = PATH)")
        }
        return .pass(name, "\(path): root-owned executable on a root-owned path")
    }

    /// Opens the reader the way the login helper does, reads its driver and name, and closes
    /// it again before returning.
    static func reader(_ options: Options, fprintd: [Int32]) -> StatusCheck {
        let opened: (driver: String, name: String)
        do {
            let reader = try FingerprintReader.open(
                virtualReader: options.virtualReader,
                virtualStorageReader: options.virtualStorageReader, deadline: .after(seconds: 5))
            opened = (reader.driver, reader.name)
        } catch {
            if error.failure == .busy {
                let holder =
                    fprintd.isEmpty
                    ? "another program" : "fprintd (pid \(fprintd.map(String.init).joined(separator: ", ")))"
                return .fail(
                    "reader", "reader busy: \(error.message)",
                    fix: "\(holder) holds the reader; stop it (systemctl stop fprintd) or wait until it is done")
            }
            let source =
                options.virtualReader.map { "virtual reader \($0)" } ?? "no reader configured as virtual_reader"
            return .fail(
                "reader", "\(error.message) (\(source))",
                fix:
                    "connect a fingerprint reader libfprint supports (lsusb; https://fprint.freedesktop.org/supported-devices.html)"
            )
        }
        return .pass("reader", "\(opened.name) (driver \(opened.driver))")
    }

    /// Process ids of running `fprintd` processes (from /proc/<pid>/comm).
    static func fprintdProcesses() -> [Int32] {
        SafeFile.list("/proc").compactMap { name -> Int32? in
            guard let pid = Int32(name),
                let comm = try? SafeFile.read(
                    "/proc/\(name)/comm", rule: FileRule(owner: nil, forbiddenBits: 0, maxBytes: 64))
            else {
                return nil
            }
            return String(decoding: comm, as: UTF8.self).filter { $0 != "\n" } == "fprintd" ? pid : nil
        }.sorted()
    }

    static func fprintd(_ pids: [Int32], readerOK: Bool) -> StatusCheck {
        guard !pids.isEmpty else { return .pass("fprintd", "not running; the reader is free") }
        let list = pids.map(String.init).joined(separator: ", ")
        if readerOK {
            return .warn(
                "fprintd",
                "running (pid \(list)); it holds the reader while it enrolls or verifies, and a login then finds it busy",
                fix: "if pam_fprintd is not used: systemctl disable --now fprintd")
        }
        return .fail(
            "fprintd", "running (pid \(list)) and the reader could not be opened",
            fix: "systemctl stop fprintd (and remove pam_fprintd from the stack), then try again")
    }

    static func enrolled(_ context: Context) -> StatusCheck {
        do {
            let fingers = try ListCommand.enrolledFingers(context)
            guard !fingers.isEmpty else {
                return .fail(
                    "enrolled", "\(context.user) has no enrolled fingers",
                    fix: "fingerauth enroll --user \(context.user)")
            }
            if let problem = directoryProblem(context.paths.userDirectory) {
                return .fail(
                    "enrolled", problem,
                    fix: "chown root:root \(context.paths.userDirectory) && chmod 700 \(context.paths.userDirectory)")
            }
            return .pass("enrolled", fingers.joined(separator: ", "))
        } catch {
            return .fail(
                "enrolled", error.message,
                fix: "chown -R root:root \(context.paths.userDirectory) && chmod 700 \(context.paths.printsDirectory)")
        }
    }

    private static func directoryProblem(_ path: String) -> String? {
        do { try SafeFile.checkDirectory(path, rule: .privateDirectory) } catch { return error.description }
        return nil
    }

    /// The key's presence, owner and mode (it must be root 0600), size and kid.
    static func key(_ context: Context) -> (StatusCheck, DeviceKey?) {
        let path = context.paths.deviceKey
        var st = stat()
        guard lstat(path, &st) == 0 else {
            return (
                .fail(
                    "key", "\(path) does not exist",
                    fix: "fingerauth key create --user \(context.user) && fingerauth register --user \(context.user)"),
                nil
            )
        }
        let mode = String(UInt32(st.st_mode) & 0o7777, radix: 8)
        let loader = DeviceKeyLoader(tcti: context.options.tpmTCTI)
        switch loader.load(path) {
        case let .success(key):
            let place = key.isHardware ? ", in the TPM at \(loader.tcti)" : ""
            return (.pass("key", "\(path): root, mode \(mode), RSA-\(key.jwk.bits)\(place), kid \(key.kid)"), key)
        case let .failure(error):
            if let tpm = loader.tpmFailure(path) {
                return (tpmKeyCheck(tpm, path: path, tcti: loader.tcti, user: context.user), nil)
            }
            return (
                .fail(
                    "key", error.message,
                    fix:
                        "chown root:root \(path) && chmod 600 \(path); if others could read it, replace it: fingerauth key rotate --user \(context.user)"
                ), nil
            )
        }
    }

    /// A TPM key that does not load: the TPM's state, and what brings fingerprint login back.
    static func tpmKeyCheck(_ error: TPMError, path: String, tcti: String, user: String) -> StatusCheck {
        let kid = DeviceKeyLoader.describe(path).map { " (kid \($0.kid))" } ?? ""
        switch error.kind {
        case .foreignKey, .badKeyFile:
            return .fail(
                "key",
                "\(path)\(kid): the TPM at \(tcti) does not hold this key: it was cleared or replaced since the key was made, or the file comes from another machine (\(error.description))",
                fix:
                    "fingerauth key rotate --store tpm --user \(user) (makes and registers a new TPM key, then revokes the old one by its kid)"
            )
        case .lockout:
            return .fail(
                "key", "\(path)\(kid): the TPM at \(tcti) is in dictionary-attack lockout (\(error.description))",
                fix:
                    "wait until the TPM's lockout recovery time has passed, or clear it with the lockout authority: tpm2_dictionarylockout --clear-lockout"
            )
        case .unreachable:
            return .fail(
                "key", "\(path)\(kid): no TPM answers at \(tcti) (\(error.description))",
                fix:
                    "check tpm_tcti in the configuration and that the TPM is present (device:/dev/tpmrm0); without a TPM: fingerauth key rotate --store file --user \(user)"
            )
        case .failed:
            return .fail(
                "key", "\(path)\(kid): the TPM at \(tcti) refused the key (\(error.description))",
                fix: "fingerauth key rotate --store tpm --user \(user)")
        }
    }

    /// Debian's tool for the profiles in /usr/share/pam-configs (libpam-runtime).
    static let pamAuthUpdate = "/usr/sbin/pam-auth-update"

    static func pam(directory: String, prompt: PromptMode = .sequential) -> StatusCheck {
        let services = PamServices.using(directory: directory)
        guard !services.isEmpty else {
            let byHand =
                "add the line from `fingerauth pam-line sudo` to \(directory)/sudo (before @include common-auth)"
            // Debian's way first (every service that includes common-auth); the by-hand line for chosen services.
            let fix =
                SafeFile.exists(pamAuthUpdate)
                ? "once `fingerauth test --user USER` succeeds: pam-auth-update --enable fingerauth; or by hand, for chosen services: "
                    + byHand
                : byHand
            return .fail("pam", "no service in \(directory) uses \(PamServices.module)", fix: fix)
        }
        let used = services.map { $0.how == "direct" ? $0.service : "\($0.service) (\($0.how))" }.joined(
            separator: ", ")
        let askingAgain = PamPasswordHandOn.askingAgain(directory: directory, configured: prompt)
        if !askingAgain.isEmpty {
            return .warn(
                "pam",
                "\(used); but with prompt = parallel the password typed at \"Password or place your finger\" is asked again by \(askingAgain.joined(separator: ", ")) (no try_first_pass)",
                fix: "add try_first_pass to those lines, or set prompt = sequential")
        }
        let unrecorded = PamServices.withoutSessionRecord(directory: directory)
        if !unrecorded.isEmpty {
            return .warn(
                "pam",
                "\(used); but \(unrecorded.joined(separator: ", ")) start sessions (pam_loginuid) without the module's session line: a sudo inside such a remote session that unsets the SSH variables may ask for a finger",
                fix:
                    "add `session optional pam_fingerauth.so` after pam_loginuid.so in \(unrecorded.map { directory + "/" + $0 }.joined(separator: ", ")) (pam-auth-update --enable fingerauth puts it in common-session)"
            )
        }
        return .pass("pam", used)
    }
}
