/// The login decision's side of `AttemptLimit`: the check before the helper starts, the
/// count when the reader is armed, the clearing after a success. Deny by default: a record
/// that can be neither read nor written means the reader is not armed.
extension LoginFlow {
    /// Why the reader must not be armed for this user now (too many failed attempts, or no
    /// usable record), or nil.
    func attemptsStop(_ request: LoginRequest, _ options: Options) -> Stop? {
        let now = ledger.nowMilliseconds()
        switch ledger.update(request.user, { _ in }) {
        case let .failure(why):
            return Stop(
                say(
                    LoginOutcome(.authInfoUnavailable, "attempt record: \(why); reader not armed"),
                    .readerUnavailable, request, options))
        case let .success(entry):
            if let replaced = entry.replaced {
                trace("attempt record not trusted (\(replaced)); replaced by one at the limit")
            }
            guard let until = AttemptLimit.pausedUntil(entry.record, now: now) else { return nil }
            var reason = AttemptLimit.pausedReason(AttemptLimit.current(entry.record, now: now), until: until, now: now)
            if let replaced = entry.replaced {
                reason += " (record not trusted: \(replaced); replaced by one at the limit)"
            }
            return Stop(say(LoginOutcome(.authInfoUnavailable, reason), .tooManyAttempts, request, options))
        }
    }

    /// Counts one failed attempt for `user` now, before the helper opens the reader; the
    /// error when it could not be recorded (the reader must then not be used).
    package func countAttempt(_ user: String) -> AttemptLedgerError? {
        let now = ledger.nowMilliseconds()
        switch ledger.update(user, { $0 = AttemptLimit.addingFailure($0, now: now) }) {
        case let .failure(why): return why
        case let .success(entry):
            trace(
                "failed attempt counted before the helper starts: \(entry.record.failures) in a row (a success clears it)"
            )
            return nil
        }
    }

    /// A success: the user's failed attempts are forgotten.
    package func clearAttempts(_ user: String) {
        if case let .failure(why) = ledger.update(user, { $0 = AttemptRecord() }) {
            trace("attempt record not cleared after the success: \(why)")
        }
    }

    /// Takes back the attempt counted for a request in which no finger was tried (the reader
    /// never armed, or the parallel prompt answered with the password).
    package func takeBackAttempt(_ user: String) {
        if case let .failure(why) = ledger.update(user, { $0 = AttemptLimit.takingBack($0) }) {
            trace("attempt record not corrected: \(why)")
        }
    }
}
