import FingerAuthCore

/// How the helper's login ended: its exit status, and whether the process should end at
/// once (`immediately`: the verdict is out, the reader closed, the key released; nothing of
/// the process matters any more) or return normally.
package struct HelperExit: Equatable, Sendable {
    /// The helper's exit statuses: 0 only after `ACCEPTED` or `OFFLINE`.
    package enum Code: Int32, Sendable {
        case accepted = 0
        case denied = 1
        case usage = 2
        case failed = 3
    }

    package var code: Code
    package var immediately: Bool

    package init(_ code: Code, immediately: Bool = false) {
        self.code = code
        self.immediately = immediately
    }
}

/// `fingerauth-login --login`'s decision, in this order: in parallel reach the authenticator
/// (and sign the token ahead) in the background while the flow asks the system bus (lid,
/// fprintd), loads the device key and opens the reader; as soon as the reader is open and
/// the authenticator answered say `READY`, so that nobody is asked for a finger that could
/// not log them in. After a match: close the reader, `MATCH`, one POST on the warm
/// connection, the verdict. When the network says the authenticator cannot be reached, a
/// usable offline grant lets the login go on offline; anything else is no evidence, and the
/// password follows.
package struct HelperLoginFlow<
    Readers: HelperReaderSide, Keys: HelperKeySource, Channel: AuthenticatorChannel, Book: HelperOfflineBook,
    Clock: HelperClock, Background: HelperBackground, Output: HelperOutput
> {
    package typealias Session = HelperAuthenticator<Channel, Book, Clock, Keys.Key>

    package let job: LoginJob
    package let readers: Readers
    package let keys: Keys
    package let background: Background
    package let output: Output
    /// The authenticator's side of this login (the channel, the offline book, the key once loaded).
    package let session: Session

    /// How long the authenticator's warm-up may take before `READY` is given up (its own
    /// bound is 3 s), counted from the flow's start.
    package static var warmUpWaitMilliseconds: Int64 { 3500 }
    /// How long a match may wait for the signature made ahead (RSA-3072: a few ms).
    package static var signingWaitMilliseconds: Int64 { 2000 }
    /// How long the background work waits for the key before it leaves the signature to the
    /// match: the reader's 5 s to open, and 2 s more.
    package static var keyWaitMilliseconds: Int64 { 7000 }

    package init(
        job: LoginJob, readers: Readers, keys: Keys, channel: Channel, book: Book, clock: Clock,
        background: Background, output: Output
    ) {
        self.job = job
        self.readers = readers
        self.keys = keys
        self.background = background
        self.output = output
        session = Session(job: job, channel: channel, book: book, clock: clock)
    }

    /// The whole login; every line goes to `output` as soon as it is decided. `startedAt`:
    /// when the helper started (the clock's monotonic milliseconds), for the bound of the
    /// warm-up and the login's stage times.
    package func run(startedAt started: Int64) -> HelperExit {
        do {
            return try login(started: started)
        } catch {
            output.emit(error.message)
            return HelperExit(.failed)
        }
    }

    private func login(started: Int64) throws(HelperStop) -> HelperExit {
        let clock = session.clock
        // One piece of work reaches the authenticator from now on, while the flow asks the
        // system bus (lid, fprintd: mostly waiting for other processes), loads the key and
        // opens the reader. Once the warm-up has an answer it says so, then signs the token
        // ahead once the flow handed it the key, so that neither READY waits for the
        // signature nor a refused connection pays for one.
        let session = self.session
        let background = self.background
        let keyWait = Self.keyWaitMilliseconds
        let parallel = background.start {
            session.warmUp()
            background.warmedUp()
            let bound = clock.monotonicMilliseconds() &+ keyWait
            if session.unreachable == nil, background.awaitKey(until: bound) { session.signAhead() }
        }
        // The lid and fprintd before the key: a closed lid or a reader fprintd holds ends here.
        try readers.choose()
        switch keys.load() {
        case let .success(loaded): session.key = loaded
        case let .failure(why):
            output.emit(.fail(.key, detail: why.message))
            return HelperExit(.failed)
        }
        background.keyLoaded()
        if !parallel { session.warmUp() }
        let reader = try readers.open()
        if parallel, !background.awaitWarmUp(until: started &+ Self.warmUpWaitMilliseconds) {
            reader.close()
            output.emit(
                .fail(.unreachable, detail: "authenticator did not answer within \(Self.warmUpWaitMilliseconds) ms"))
            return HelperExit(.failed)
        }
        // Unreachable (refused, no route, a name server's no, a timeout while running, 502–504):
        // only a usable offline grant goes on. Any other failure (this host's own error, a
        // process kept from running, TLS, a wrong answer) is no evidence: the password.
        var offline = false
        if let why = session.unreachable {
            guard session.offlineCause != nil else {
                reader.close()
                output.emit(
                    .fail(.unreachable, detail: why + "; offline: not used, no evidence the network is the problem"))
                return HelperExit(.failed)
            }
            switch session.offlineGrant() {
            case .success: offline = true
            case let .failure(refusal):
                reader.close()
                output.emit(.fail(.unreachable, detail: why + "; offline: " + refusal.description))
                return HelperExit(.failed)
            }
        }
        output.emit(.ready(reader: reader.readerName))
        let readyAt = clock.monotonicMilliseconds()
        let deadline = readyAt &+ Int64(min(max(job.options.timeoutSeconds, 0), 86_400)) &* 1000 &+ 1
        if !parallel { session.signAhead() }
        var left = job.options.maxTries
        while left > 0 {
            switch try reader.verify(deadline: deadline, events: output.emit) {
            case let .match(finger):
                let matchedAt = clock.monotonicMilliseconds()
                reader.close()
                output.emit(.match(finger: finger))
                return offline
                    ? finishOffline(parallel: parallel)
                    : finish(
                        parallel: parallel,
                        stages: LoginStageReport(
                            ready: readyAt &- started, match: matchedAt &- readyAt))
            case .noMatch:
                left -= 1
                output.emit(.noMatch(triesLeft: left))
            }
        }
        return HelperExit(.denied)
    }

    /// After a match, online: the token (signed ahead, or now) POSTed, the verdict.
    private func finish(parallel: Bool, stages: LoginStageReport) -> HelperExit {
        let clock = session.clock
        if parallel, !background.awaitEnd(until: clock.monotonicMilliseconds() &+ Self.signingWaitMilliseconds) {
            output.emit(
                .unavailable(
                    jti: job.jti, kid: session.key?.kid ?? "",
                    detail: "signing took over \(Self.signingWaitMilliseconds) ms"))
            return HelperExit(.denied)
        }
        let verdict = session.login(stages: stages)
        output.emit(verdict)
        guard case .accepted = verdict else { return end(.denied) }
        // prompt = parallel: the verdict is in the pipe first, then the newline ends the
        // module's pending read.
        if job.terminal != nil { output.endTerminalRead() }
        return end(.accepted)
    }

    /// After a match, offline: the login recorded within the grant, or why not.
    private func finishOffline(parallel: Bool) -> HelperExit {
        // The warm-up ended (unreachable): the background work has nothing left to do.
        if parallel {
            _ = background.awaitEnd(until: session.clock.monotonicMilliseconds() &+ Self.signingWaitMilliseconds)
        }
        let verdict = session.offlineLogin()
        output.emit(verdict)
        guard case .offline = verdict else { return end(.denied) }
        if job.terminal != nil { output.endTerminalRead() }
        return end(.accepted)
    }

    /// The verdict is out: the device key is released first (a TPM key's object is flushed
    /// from the TPM, where it would otherwise stay loaded and fill its few slots), and the
    /// process may end at once.
    private func end(_ code: HelperExit.Code) -> HelperExit {
        session.key = nil
        return HelperExit(code, immediately: true)
    }
}
