import FingerAuthCore
import FingerAuthCrypto
import FingerAuthLoginDomain
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// One user's offline state on this host, under their state directory (all root, 0600):
/// the grant (`offline-grant`), the offline logins made with it (`offline-log`, signed
/// records appended one a line) and how far the authenticator holds them (`offline-sent`);
/// judged against the host's clock floor (`ClockFloor`), which each offline login raises.
/// Used by the login helper and by `fingerauth sync`; every reader and writer takes the
/// log's lock, so that two logins at once cannot both use a grant's last use.
package struct OfflineBook {
    package let paths: StatePaths
    /// This host's name in tokens and grants (`host_id`, else the host name).
    package let host: String

    /// Largest offline log kept; past it no offline login is made until records are uploaded.
    package static let maxLogBytes = 1 << 20
    static let lockWaitMilliseconds: Int64 = 2000

    package init(stateDirectory: String, user: String, host: String) {
        paths = StatePaths(root: stateDirectory, user: user)
        self.host = host
    }

    // MARK: the grant

    /// The grant kept for the user: nil when there is none; a refusal when the file may not be
    /// trusted (owner, mode, a link) or does not parse.
    package func receipt() -> Result<GrantReceipt?, GrantRefusal> {
        let bytes: [UInt8]
        do {
            bytes = try SafeFile.read(paths.offlineGrant, rule: .secret)
        } catch {
            if case .missing = error { return .success(nil) }
            return .failure(GrantRefusal(Self.named(error, paths.offlineGrant, "offline-grant")))
        }
        guard let json = try? JSONParser(maxBytes: 16 * 1024, maxDepth: 4).parse(bytes),
            let receipt = GrantReceipt(json: json)
        else { return .failure(GrantRefusal("offline grant file does not parse")) }
        return .success(receipt)
    }

    /// Verifies `token` (an online answer's `offline_grant`) against the pinned keys and this
    /// user, host and key, then keeps it with the clocks of now in place of any other.
    package func keep(_ token: String, kid: String, pins: [String: GrantKeyJWK], now: GrantClockReading)
        -> Result<OfflineGrant, GrantRefusal>
    {
        let checked = OfflineGrant.verified(
            token, keys: pins, check: OpenSSLGrantCheck(), user: paths.user, host: host, kid: kid)
        guard case let .success(grant) = checked else { return checked }
        let receipt = GrantReceipt(token: token, received: now)
        do {
            try SafeFile.writeAtomically(
                paths.offlineGrant, JSONEncoding.encodeBytes(receipt.json), mode: 0o600, durable: false)
        } catch {
            return .failure(GrantRefusal("offline grant not kept: \(error)"))
        }
        compact()
        return .success(grant)
    }

    /// Drops the user's grant (an authoritative answer: refused, or no grant any more).
    package func drop() {
        try? SafeFile.remove(paths.offlineGrant)
    }

    // MARK: offline login

    /// Whether an offline login of `kid` for `service` may be made now: the grant kept, its
    /// signature by a pinned key, its binding, and both clocks and its uses (`OfflineJudgement`).
    package func usable(kid: String, service: String, pins: [String: GrantKeyJWK], now: GrantClockReading)
        -> Result<(grant: OfflineGrant, expires: Int64), GrantRefusal>
    {
        withLog(creating: false) { (log) -> Result<(grant: OfflineGrant, expires: Int64), GrantRefusal> in
            log.flatMap { judge($0, kid: kid, service: service, pins: pins, now: now) }
        }
    }

    /// Records an offline login and returns the grant and when it ends — under the log's
    /// lock, the grant judged again, the record signed by the device key (`sign`) and
    /// appended and fsynced before anyone is told yes. A record that cannot be written is
    /// no login.
    package func recordLogin(
        kid: String, service: String, jti: String, pins: [String: GrantKeyJWK], now: GrantClockReading,
        sign: ([UInt8]) -> [UInt8]?
    ) -> Result<(grant: OfflineGrant, expires: Int64), GrantRefusal> {
        withLog(creating: true) { (log) -> Result<(grant: OfflineGrant, expires: Int64), GrantRefusal> in
            let records: [(line: String, record: OfflineRecord)]
            switch log {
            case let .failure(why): return .failure(why)
            case let .success(found): records = found
            }
            let judged = judge(records, kid: kid, service: service, pins: pins, now: now)
            guard case let .success((grant, _)) = judged else { return judged }
            // Each device key's records are a chain of their own, as the authenticator keeps them.
            let last = records.last { $0.record.kid.sameBytes(as: kid) }
            let record = OfflineRecord(
                seq: (last?.record.seq ?? 0) + 1, gid: grant.gid, user: paths.user, host: host, kid: kid, jti: jti,
                service: service, at: now.wall, previous: last.flatMap { Self.hash($0.line) } ?? "")
            let input = CompactJWT.signingInput(header: OfflineRecord.header(kid: kid), claims: record.claims)
            guard let signature = sign(input) else { return .failure(GrantRefusal("device key did not sign")) }
            let line = CompactJWT.serialize(signingInput: input, signature: signature)
            if let why = append(line) { return .failure(GrantRefusal("offline log: \(why)")) }
            ClockFloor(stateDirectory: paths.root).raise(to: now.wall)
            return judged
        }
    }

    private func judge(
        _ records: [(line: String, record: OfflineRecord)], kid: String, service: String,
        pins: [String: GrantKeyJWK], now: GrantClockReading
    ) -> Result<(grant: OfflineGrant, expires: Int64), GrantRefusal> {
        let receipt: GrantReceipt
        switch self.receipt() {
        case let .failure(why): return .failure(why)
        case .success(nil): return .failure(GrantRefusal("no offline grant"))
        case let .success(kept?): receipt = kept
        }
        let grant: OfflineGrant
        switch OfflineGrant.verified(
            receipt.token, keys: pins, check: OpenSSLGrantCheck(), user: paths.user, host: host, kid: kid)
        {
        case let .failure(why): return .failure(why)
        case let .success(verified): grant = verified
        }
        let floor: Int64
        switch ClockFloor(stateDirectory: paths.root).read() {
        case let .failure(why): return .failure(why)
        case let .success(kept): floor = kept
        }
        let used = records.filter { $0.record.gid.sameBytes(as: grant.gid) }.count
        let latest = records.map(\.record.at).max() ?? 0
        return OfflineJudgement.judge(
            grant, receipt: receipt.received, now: now, latestSeen: latest, floor: floor, usesSoFar: used,
            service: service
        ).map { (grant, $0) }
    }

    // MARK: the log

    /// The records of the log, in order (lines that do not parse are skipped: the
    /// authenticator sees the gap).
    package func records() -> [(line: String, record: OfflineRecord)] {
        withLog(creating: false) { (try? $0.get()) ?? [] }
    }

    /// The records the authenticator acknowledged one by one, as (device key, `seq`)
    /// (`offline-sent`: `KID SEQ` lines, one per record).
    package func sent() -> Set<AcknowledgedRecord> {
        guard let bytes = try? SafeFile.read(paths.offlineSent, rule: .secret) else { return [] }
        var held: Set<AcknowledgedRecord> = []
        for line in bytes.split(separator: 0x0A) {
            let fields = line.split(separator: 0x20)
            guard fields.count == 2, let seq = Int64(String(decoding: fields[1], as: UTF8.self)) else { continue }
            held.insert(AcknowledgedRecord(kid: String(decoding: fields[0], as: UTF8.self), seq: seq))
        }
        return held
    }

    /// Notes that the authenticator holds `kid`'s records numbered `seqs` (each one it named).
    package func markSent(kid: String, seqs: [Int64]) {
        guard !seqs.isEmpty, !kid.isEmpty, !kid.contains(" "), !kid.contains("\n") else { return }
        var held = sent()
        let before = held.count
        for seq in seqs { held.insert(AcknowledgedRecord(kid: kid, seq: seq)) }
        guard held.count > before else { return }
        writeSent(held)
    }

    private func writeSent(_ held: Set<AcknowledgedRecord>) {
        let lines = held.sorted { ($0.kid, $0.seq) < ($1.kid, $1.seq) }.map { "\($0.kid) \($0.seq)\n" }
        try? SafeFile.writeAtomically(paths.offlineSent, Array(lines.joined().utf8), mode: 0o600)
    }

    /// The records the authenticator has not acknowledged, oldest first, at most `limit`.
    package func unsent(limit: Int = OfflineRecord.maxPerUpload) -> [(line: String, record: OfflineRecord)] {
        let held = sent()
        return Array(records().filter { !held.contains(AcknowledgedRecord($0.record)) }.prefix(limit))
    }

    /// The file's error with its short name for its path: the helper's lines are short.
    static func named(_ error: SafeFileError, _ path: String, _ name: String) -> String {
        let text = error.description
        return text.hasPrefix(path) ? name + text.dropFirst(path.count) : text
    }

    static func hash(_ line: String) -> String? {
        Digest.sha256(Array(line.utf8)).map(Base64URL.encode)
    }

    /// Runs `body` with the log's records while holding its lock (flock on the log file,
    /// created root 0600 when missing and `creating`; at most `lockWaitMilliseconds` of
    /// waiting, then a refusal). A log that does not exist has no records, and nothing to
    /// lock. A log compacted (replaced) while this waited is locked again.
    private func withLog<T>(
        creating: Bool, _ body: (Result<[(line: String, record: OfflineRecord)], GrantRefusal>) -> T
    ) -> T {
        let deadline = MonotonicInstant.now().adding(milliseconds: Self.lockWaitMilliseconds)
        for _ in 0..<3 {
            let fd = open(
                paths.offlineLog, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (creating ? O_CREAT : 0), 0o600)
            if fd < 0 { return errno == ENOENT ? body(.success([])) : body(readLog()) }
            var locked = flock(fd, LOCK_EX | LOCK_NB) == 0
            while !locked && MonotonicInstant.now() < deadline {
                usleep(5000)
                locked = flock(fd, LOCK_EX | LOCK_NB) == 0
            }
            guard locked else {
                close(fd)
                return body(.failure(GrantRefusal("offline-log: held by another login")))
            }
            var held = stat()
            var current = stat()
            guard fstat(fd, &held) == 0, lstat(paths.offlineLog, &current) == 0, held.st_ino == current.st_ino,
                held.st_dev == current.st_dev
            else {
                close(fd)
                continue
            }
            let result = body(readLog())
            close(fd)
            return result
        }
        return body(.failure(GrantRefusal("offline-log: replaced while waiting")))
    }

    /// Drops the records the authenticator acknowledged from the log, but the last of each
    /// device key (the next record chains to it), and forgets the acknowledgements of records
    /// no longer in the log; under the log's lock. Called when a new grant replaces the old
    /// one, so that no record of the grant in use (its count of uses) goes.
    func compact() {
        withLog(creating: false) { log in
            guard case let .success(records) = log, !records.isEmpty else { return }
            let held = sent()
            var last: [String: Int64] = [:]
            for entry in records { last[entry.record.kid] = max(last[entry.record.kid] ?? 0, entry.record.seq) }
            let kept = records.filter {
                !held.contains(AcknowledgedRecord($0.record)) || $0.record.seq == last[$0.record.kid]
            }
            guard kept.count < records.count else { return }
            try? SafeFile.writeAtomically(
                paths.offlineLog, Array(kept.map { $0.line + "\n" }.joined().utf8), mode: 0o600)
            writeSent(held.intersection(kept.map { AcknowledgedRecord($0.record) }))
        }
    }

    /// The log's records; a refusal when it may not be trusted (owner, mode, a link, too
    /// large): its count of uses is then unknown, and no offline login is made.
    private func readLog() -> Result<[(line: String, record: OfflineRecord)], GrantRefusal> {
        let bytes: [UInt8]
        do {
            bytes = try SafeFile.read(
                paths.offlineLog, rule: FileRule(forbiddenBits: 0o077, maxBytes: Self.maxLogBytes))
        } catch {
            if case .missing = error { return .success([]) }
            return .failure(GrantRefusal(Self.named(error, paths.offlineLog, "offline-log")))
        }
        return .success(
            bytes.split(separator: 0x0A).compactMap { raw in
                let line = String(decoding: raw, as: UTF8.self)
                return OfflineRecord(line: line).map { (line, $0) }
            })
    }

    /// Appends `line` to the log and fsyncs it; why not, or nil.
    private func append(_ line: String) -> String? {
        let bytes = Array(line.utf8) + [0x0A]
        let fd = open(paths.offlineLog, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return "cannot open (\(String(cString: strerror(errno))))" }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_uid == 0, st.st_mode & 0o077 == 0 else {
            return "not a root-only regular file"
        }
        guard Int(st.st_size) + bytes.count <= Self.maxLogBytes,
            FileSizeLimit.permits(size: Int(st.st_size) + bytes.count)
        else { return "full" }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(fd) == 0 else { return "write failed" }
        return nil
    }
}

/// One record the authenticator named in a sync's `held`: its device key and `seq`.
package struct AcknowledgedRecord: Hashable, Sendable {
    package var kid: String
    package var seq: Int64

    package init(kid: String, seq: Int64) {
        self.kid = kid
        self.seq = seq
    }

    init(_ record: OfflineRecord) {
        self.init(kid: record.kid, seq: record.seq)
    }
}
