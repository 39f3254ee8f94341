import CPostgres
import FingerAuthDomain
import FingerAuthSystem
import FingerAuthThreads

#if canImport(Glibc)
import Glibc
#endif

/// A fleet's wake-ups on PostgreSQL: one libpq connection of this instance's own, outside
/// the pool, holding `LISTEN fingerauth_approvals` on a thread of its own. Every change of
/// an approval, on any instance, sends a notice in its transaction
/// (`SQLRegistry.announce`); for each notice this thread wakes the polls parked here on that
/// approval and its user (`ApprovalWakeups`), so a request that reached instance A reaches
/// the watch parked on instance B at once. `LISTEN` needs a session of its own: the URL must
/// reach PostgreSQL directly or through a session-pooling proxy, never a transaction-pooling
/// one (notices are lost there).
///
/// The thread waits on the connection's socket (poll(2), at most `pollMilliseconds`, so
/// `stop` is seen), reads with `PQconsumeInput` and takes each notice with `PQnotifies`.
/// When the connection drops it reconnects after a back-off (`firstBackoff` doubling to
/// `longestBackoff`), and after each (re)connection wakes every parked poll once: notices
/// sent while it was down are lost, and the woken polls read the truth (the rows). Until
/// then a watch still sees a missed change at its next poll (`approval-wait`).
///
/// `@unchecked Sendable`: `stopping` and `thread` change only under `lock`; the rest is
/// set in `init`. The connection belongs to the listening thread alone.
package final class ApprovalListener: @unchecked Sendable {
    let url: String
    let wakeups: any ApprovalWakeups
    let log: @Sendable (String) -> Void
    /// The longest wait on the socket before `stop` is looked at again.
    static let pollMilliseconds: Int32 = 250
    /// Seconds before the first attempt to reconnect, doubled per failed attempt up to
    /// `longestBackoff`.
    static let firstBackoff = 0.25
    static let longestBackoff = 5.0
    /// The longest a connection and its `LISTEN` may take.
    static let connectSeconds = 5.0

    private let lock = Lock()
    private let wake = Condition()
    private var stopping = false
    private var thread: WorkerThread?

    /// Listens on `url` (the store's, a `postgresql://` URL) and wakes `wakeups`.
    package init(url: String, wakeups: any ApprovalWakeups, log: @escaping @Sendable (String) -> Void) {
        self.url = url
        self.wakeups = wakeups
        self.log = log
    }

    deinit { stop() }

    /// Starts the thread; false when it could not be created (then a parked poll sees
    /// another instance's change at its `approval-wait`).
    @discardableResult
    package func start() -> Bool {
        switch WorkerThread.start({ [self] in loop() }) {
        case let .success(started):
            lock.withLock { thread = started }
            return true
        case let .failure(error):
            log("approval notices: cannot start the listening thread: \(error)")
            return false
        }
    }

    /// Ends the thread (within `pollMilliseconds`: every wait of the thread is bounded by
    /// it, connecting included) and closes its connection.
    package func stop() {
        let running = lock.withLock { () -> WorkerThread? in
            stopping = true
            wake.broadcast()
            defer { thread = nil }
            return thread
        }
        running?.join()
    }

    private var isStopping: Bool { lock.withLock { stopping } }

    private func loop() {
        var backoff = Self.firstBackoff
        var outage = false
        var failures = 0
        var reportedLongest = false
        while !isStopping {
            switch connect() {
            case let .success(connection):
                log(
                    outage
                        ? "approval notices: listening again; every parked poll reads the approvals again"
                        : "approval notices: listening on PostgreSQL (\(ApprovalNotice.channel))")
                wakeups.anythingMayHaveChanged()
                backoff = Self.firstBackoff
                outage = false
                failures = 0
                reportedLongest = false
                let reason = listen(connection)
                PQfinish(connection)
                guard let reason else { return }
                log("approval notices: connection lost (\(reason)); reconnecting")
                outage = true
            case let .failure(reason):
                if isStopping { return }
                // The first failure of an outage, and once more when the back-off is at its longest.
                failures += 1
                if failures == 1 || (backoff >= Self.longestBackoff && !reportedLongest) {
                    reportedLongest = backoff >= Self.longestBackoff
                    log("approval notices: cannot listen (\(reason)); trying again in \(backoff) s")
                }
                outage = true
            }
            let deadline = Deadline.after(seconds: backoff)
            let done = lock.withLock { () -> Bool in
                while !stopping && !deadline.hasPassed { wake.wait(lock, until: deadline) }
                return stopping
            }
            if done { return }
            backoff = min(backoff * 2, Self.longestBackoff)
        }
    }

    /// A connection that has run `LISTEN`, or why not (libpq's message on one line). Made
    /// without blocking (PQconnectStartParams, PQconnectPoll, PQsendQuery), each wait on
    /// the socket bounded, so that `stop` is seen while the database does not answer; the
    /// whole of it within `connectSeconds`.
    private func connect() -> Result<OpaquePointer, ListenError> {
        let keywords = [
            "connect_timeout", "application_name", "keepalives_idle", "keepalives_interval",
            "keepalives_count", "dbname",
        ]
        let values = ["\(Int(Self.connectSeconds))", "fingerauthd-listen", "10", "3", "3", url]
        let started = withCStrings(keywords) { keys in
            withCStrings(values) { vals in PQconnectStartParams(keys, vals, 1) }
        }
        guard let connection = started else { return .failure(ListenError("out of memory")) }
        // libpq would print the server's notices (a terminated session's FATAL) to stderr
        // unprefixed; the listener's own log line names what happened.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        let deadline = Deadline.after(seconds: Self.connectSeconds)
        var state = PGRES_POLLING_WRITING
        while PQstatus(connection) != CONNECTION_BAD, state != PGRES_POLLING_OK, state != PGRES_POLLING_FAILED {
            if let problem = awaitSocket(connection, writing: state == PGRES_POLLING_WRITING, until: deadline) {
                PQfinish(connection)
                return .failure(ListenError(problem))
            }
            state = PQconnectPoll(connection)
        }
        guard state == PGRES_POLLING_OK, PQstatus(connection) == CONNECTION_OK else {
            let message = PostgresConnection.clean(PQerrorMessage(connection))
            PQfinish(connection)
            return .failure(ListenError(message))
        }
        // An idle session must not be ended by a server-wide idle_session_timeout (PostgreSQL
        // 14 and later; an older server refuses the setting, which it does not have anyway).
        _ = run(connection, "SET idle_session_timeout = 0", until: deadline)
        // The channel is a fixed identifier, never outside input.
        if let problem = run(connection, "LISTEN \(ApprovalNotice.channel)", until: deadline) {
            PQfinish(connection)
            return .failure(ListenError(problem))
        }
        return .success(connection)
    }

    /// Runs `sql` (no parameters) on `connection` without blocking; nil when it succeeded,
    /// else why not.
    private func run(_ connection: OpaquePointer, _ sql: String, until deadline: Deadline) -> String? {
        guard PQsendQuery(connection, sql) == 1 else { return PostgresConnection.clean(PQerrorMessage(connection)) }
        var failure: String?
        while true {
            while PQisBusy(connection) == 1 {
                if let problem = awaitSocket(connection, writing: false, until: deadline) { return problem }
                guard PQconsumeInput(connection) == 1 else {
                    return PostgresConnection.clean(PQerrorMessage(connection))
                }
            }
            guard let result = PQgetResult(connection) else { break }
            if PQresultStatus(result) != PGRES_COMMAND_OK {
                failure = failure ?? PostgresConnection.clean(PQresultErrorMessage(result))
            }
            PQclear(result)
        }
        return failure
    }

    /// Waits until `connection`'s socket can be read (or written), in slices of
    /// `pollMilliseconds` so that `stop` is seen; nil when it can, else why not.
    private func awaitSocket(_ connection: OpaquePointer, writing: Bool, until deadline: Deadline) -> String? {
        while true {
            if isStopping { return "stopping" }
            let left = deadline.remainingMilliseconds
            if left == 0 { return "no answer within \(Int(Self.connectSeconds)) s" }
            let socket = PQsocket(connection)
            guard socket >= 0 else { return PostgresConnection.clean(PQerrorMessage(connection)) }
            var watched = pollfd(fd: socket, events: Int16(writing ? POLLOUT : POLLIN), revents: 0)
            let ready = poll(&watched, 1, Int32(min(left, Int(Self.pollMilliseconds))))
            if ready > 0 { return nil }
            if ready < 0 && errno != EINTR { return "poll: \(String(cString: strerror(errno)))" }
        }
    }

    /// Hands each notice to `wakeups` until the connection drops (its reason) or the
    /// listener stops (nil). Notices already read with an earlier result are taken first.
    private func listen(_ connection: OpaquePointer) -> String? {
        let socket = PQsocket(connection)
        guard socket >= 0 else { return "no socket" }
        var reportedForeign = false
        while !isStopping {
            while let notice = PQnotifies(connection) {
                let payload = notice.pointee.extra.map { String(cString: $0) } ?? ""
                PQfreemem(notice)
                if let parsed = ApprovalNotice(payload: payload) {
                    wakeups.approvalChanged(parsed)
                } else if !reportedForeign {
                    // Once per connection: whoever may NOTIFY on the database could fill the log.
                    reportedForeign = true
                    log("approval notices: a notice that is not ours was ignored (\(payload.utf8.count) bytes)")
                }
            }
            guard PQstatus(connection) == CONNECTION_OK else {
                return PostgresConnection.clean(PQerrorMessage(connection))
            }
            var watched = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&watched, 1, Self.pollMilliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                return "poll: \(String(cString: strerror(errno)))"
            }
            if ready == 0 { continue }
            guard PQconsumeInput(connection) == 1 else { return PostgresConnection.clean(PQerrorMessage(connection)) }
        }
        return nil
    }

    /// Runs `body` with a NULL-terminated array of C copies of `strings` (freed after).
    private func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T?) -> T? {
        let raw: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in raw { free(pointer) } }
        let pointers: [UnsafePointer<CChar>?] = raw.map { $0.map { UnsafePointer($0) } }
        return pointers.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            return body(base)
        }
    }
}

/// Why the listener has no connection: libpq's message, on one line.
struct ListenError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
