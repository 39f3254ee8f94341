import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth-login --verify`: the login's reader part alone, for a remote approval decided
/// on this workstation (`fingerauth approve`). The request comes on standard input exactly
/// as for `--login` (a `LoginJob`: the user whose enrolled prints count, the reader
/// settings); the reader is chosen by the same plan (lid, fprintd or libfprint, the user's
/// prints checked in forked children first) and tried `max_tries` times within `timeout`.
/// Lines as the login writes them: `READY`, `RETRY`, `NOMATCH n`, `MATCH finger` or `FAIL`.
/// No key is loaded and nothing is sent: the caller signs its decision only after `MATCH`
/// and exit status 0.
enum VerifyCommand {
    typealias ExitCode = HelperExit.Code

    static func run() -> ExitCode {
        guard let job = RequestInput.job() else { return .usage }
        // Bounded whatever a library does: the reader's opening, the finger's timeout, the close.
        alarm(UInt32(clamping: job.options.timeoutSeconds &+ 15))
        return verify(job)
    }

    static func verify(_ job: LoginJob) -> ExitCode {
        let prints = Result { () throws(ReaderError) in
            try PrintStore(stateDirectory: job.options.stateDirectory, user: job.user).load()
        }
        let readers = PlannedReaders(job: job, prints: prints)
        let reader: OpenedReader
        do {
            try readers.choose()
            reader = try readers.open()
        } catch {
            LineOutput.emit(error.message)
            return .failed
        }
        LineOutput.emit(.ready(reader: reader.readerName))
        let seconds = Int64(min(max(job.options.timeoutSeconds, 1), 120))
        let deadline = MonotonicInstant.now().milliseconds &+ seconds &* 1000
        var left = job.options.maxTries
        while left > 0 {
            do {
                switch try reader.verify(deadline: deadline, events: LineOutput.emit) {
                case let .match(finger):
                    // Said before the reader's close: the decision need not wait for it.
                    LineOutput.emit(.match(finger: finger))
                    reader.close()
                    return .accepted
                case .noMatch:
                    left -= 1
                    LineOutput.emit(.noMatch(triesLeft: left))
                }
            } catch {
                reader.close()
                LineOutput.emit(error.message)
                return .failed
            }
        }
        reader.close()
        return .denied
    }
}
