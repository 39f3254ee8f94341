/// What the service does next for a request: answer it, or have items written (through the
/// group commit) and go on with their outcomes. An endpoint is a chain of steps, so that
/// the HTTP layer can park a request while its write commits instead of blocking a thread
/// on it (`HTTPServer` suspends the connection); `AuthenticatorService.handle` runs the
/// same chain synchronously.
public enum Step {
    case answer(HTTPResponse)
    /// The answer, sent after `AuthenticatorService.tarpit` with the connection parked
    /// meanwhile (a 429 to an address past its limit); at once where nothing is parked.
    case answerAfterPause(HTTPResponse)
    case write([WriteItem], (Result<[WriteOutcome], StoreError>) -> Step)
}

/// One request on its way through the service: what its log line and /metrics will say.
/// Its steps run one after another, never at once, so it needs no lock.
///
/// `@unchecked Sendable`: a request's steps may run on different threads (a libmicrohttpd
/// thread, then the writer's), but one after another, each handed over through a lock.
public final class Exchange: @unchecked Sendable {
    var summary: RequestSummary
    let started: SuspendingClock.Instant
    let path: String
    let address: String

    init(request: HTTPRequest, address: String) {
        summary = RequestSummary(method: request.method, path: request.path, status: 500, peer: address)
        started = SuspendingClock.now
        path = request.path
        self.address = address
    }

    /// Seconds since the request began in the service (CLOCK_MONOTONIC).
    var elapsedSeconds: Double {
        let (seconds, attoseconds) = started.duration(to: SuspendingClock.now).components
        return max(0, Double(seconds) + Double(attoseconds) * 1e-18)
    }
}
