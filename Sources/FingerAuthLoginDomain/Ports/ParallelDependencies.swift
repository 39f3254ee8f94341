/// What `prompt = parallel` needs beyond the sequential login: a helper that runs in the
/// background while the module is blocked in the conversation, and a prompt whose answer
/// (a password, perhaps) stays in the adapter and is never a Swift string.

/// Starts the login helper without waiting for its lines.
package protocol BackgroundLoginHelper {
    /// The running helper, or why it could not start (an outcome for `LoginFlow.decide`).
    func start(_ job: LoginJob) -> Result<RunningLogin, BackgroundStartFailure>
}

/// Why the helper could not start in the background.
package struct BackgroundStartFailure: Error, Equatable, Sendable {
    package var outcome: HelperOutcome
    package init(_ outcome: HelperOutcome) { self.outcome = outcome }
}

/// A login helper started by `BackgroundLoginHelper`. Its owner stops it (or it is stopped
/// when released).
package protocol RunningLogin: AnyObject {
    /// The lines the helper has written so far, read without waiting, as an outcome:
    /// `.accepted` only for an `ACCEPTED` after a `MATCH` followed by exit status 0 (waited
    /// for at most the exit grace); nil while no verdict is there. Stops the helper
    /// whenever it returns anything but `.accepted`.
    func verdictNow() -> HelperOutcome?
    /// As `verdictNow`, waiting for the verdict up to `milliseconds`; but when none came by
    /// then, nil with the helper still running (its owner withdraws or stops it).
    func verdict(untilMilliseconds milliseconds: Int64) -> HelperOutcome?
    /// A remote approval's first line (`APPROVAL`), waited for up to `milliseconds`; a
    /// helper that says anything else first has ended (its outcome).
    func approvalPrompt(untilMilliseconds milliseconds: Int64) -> ApprovalPrompt
    /// Asks the helper to end on its own (SIGTERM): a remote approval's helper withdraws its
    /// request first. Does not wait.
    func withdraw()
    /// Kills the helper's process group and reaps it.
    func stop()
}

/// How a remote approval's helper began.
package enum ApprovalPrompt: Equatable, Sendable {
    /// The authenticator holds the request: the code the person sees and the user's workstations.
    case asked(code: String, workstations: String)
    /// It ended before (an outcome, or nil when nothing came in time).
    case ended(HelperOutcome?)
}

/// One echo-off prompt through the PAM conversation.
package protocol SecretPrompt {
    /// PAM_PROMPT_ECHO_OFF with `text`; nil when the conversation failed.
    func askSecret(_ text: String) -> SecretAnswer?
}

/// The answer to a `SecretPrompt`. The adapter keeps the bytes, wipes them when released,
/// and gives them to no one but libpam (`PAM_AUTHTOK`).
package protocol SecretAnswer: AnyObject {
    /// The person pressed Enter on an empty line (or an injected newline ended the read).
    var isEmpty: Bool { get }
    /// Stores the answer as `PAM_AUTHTOK` for the next module of the stack; false on failure.
    func handToNextModule() -> Bool
}
