import CSystem
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

/// Each user's failed fingerprint attempts (`AttemptLimit`) as a root-only file,
/// `<attempts_dir>/<user>` (default `/run/fingerauth/attempts`: gone at reboot), shared by
/// the module's root path and the agent.
///
/// - The directory: every directory on the way opened `O_NOFOLLOW` and checked with
///   `fstat` (root-owned, not writable by group or others unless sticky); the last one
///   made root 0700 when missing and required to be root's and closed to everyone else.
/// - The record: opened `O_NOFOLLOW` relative to that directory, then checked (a regular
///   file, root's, mode 0600 or stricter, one link, exactly one record line). Anything else
///   is not believed — neither lifting the limit nor breaking it: the entry is removed and a
///   record *at the limit* takes its place.
/// - Locking: `flock` without waiting, retried for at most `lockMilliseconds`; read, change
///   and write happen under it, so that a sudo and an su for the same user count both.
/// - Space: a new record is written at once in its fixed width, so that later changes
///   rewrite the same bytes in place and a full `/run` cannot stop them; a record that
///   cannot be made (no space, no inode) is an error, and the reader is not armed.
/// - Time: CLOCK_BOOTTIME (runs through suspend; no wall-clock change moves it).
/// - Limits: a caller's RLIMIT_FSIZE below one record is an error, not a SIGXFSZ.
package struct FileAttemptLedger: AttemptLedger {
    package let directory: String
    /// The longest wait for another process's lock on the same record.
    package var lockMilliseconds: Int64 = 250

    package init(directory: String) { self.directory = directory }

    package func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(clockBoottime, &ts)
        return Int64(ts.tv_sec) &* 1000 &+ Int64(ts.tv_nsec) / 1_000_000
    }

    package func update(_ user: String, _ change: (inout AttemptRecord) -> Void) -> Result<
        AttemptEntry, AttemptLedgerError
    > {
        guard UserName.isValid(user) else { return .failure(AttemptLedgerError("not a user name for a record")) }
        // The caller of a setuid host sets the limits: a file-size limit below one record
        // would make the write raise SIGXFSZ and end the host instead of failing.
        guard FileSizeLimit.permits(size: AttemptRecord.lineBytes) else {
            return .failure(AttemptLedgerError("the caller's file-size limit (RLIMIT_FSIZE) is below one record"))
        }
        let dir: Int32
        switch openDirectory() {
        case let .success(fd): dir = fd
        case let .failure(why): return .failure(why)
        }
        defer { close(dir) }
        let path = directory + "/" + user
        // A record replaced by another process between our open and our lock is opened again.
        for _ in 0..<3 {
            switch openRecord(dir, user, path) {
            case let .failure(why): return .failure(why)
            case let .success((fd, replaced)):
                defer { close(fd) }
                guard lock(fd) else {
                    return .failure(
                        AttemptLedgerError("\(path): locked by another login for over \(lockMilliseconds) ms"))
                }
                guard stillNamed(dir, user, fd) else { continue }
                return readChangeWrite(fd, path, replaced, change)
            }
        }
        return .failure(AttemptLedgerError("\(path): replaced again and again while it was opened"))
    }

    // MARK: - The directory

    private func openDirectory() -> Result<Int32, AttemptLedgerError> {
        guard directory.hasPrefix("/"), directory.utf8.count < 4096 else {
            return .failure(AttemptLedgerError("\(directory): not an absolute path"))
        }
        let parts = directory.split(separator: "/").map(String.init)
        guard !parts.isEmpty, !parts.contains(".."), !parts.contains(".") else {
            return .failure(AttemptLedgerError("\(directory): not a plain path"))
        }
        var fd = fa_open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        guard fd >= 0 else { return .failure(AttemptLedgerError("cannot open /")) }
        var walked = ""
        for (index, part) in parts.enumerated() {
            let last = index == parts.count - 1
            if let problem = FileAttemptLedger.checkParent(fd, walked.isEmpty ? "/" : walked) {
                close(fd)
                return .failure(AttemptLedgerError(problem))
            }
            walked += "/" + part
            var next = fa_openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
            if next < 0 && fa_errno() == ENOENT {
                // Made by root here, with the exact mode whatever the host's umask.
                let made = mkdirat(fd, part, 0o700) == 0
                if !made && fa_errno() != EEXIST {
                    let e = fa_errno()
                    close(fd)
                    return .failure(AttemptLedgerError("cannot create \(walked): \(String(cString: strerror(e)))"))
                }
                next = fa_openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
                if made && next >= 0 {
                    // Root's group too: inside sudo the effective group is the caller's.
                    _ = fchown(next, 0, 0)
                    _ = fchmod(next, last ? 0o700 : 0o755)
                }
            }
            let e = fa_errno()
            close(fd)
            guard next >= 0 else {
                return .failure(
                    AttemptLedgerError(
                        "\(walked): "
                            + (e == ENOTDIR || e == ELOOP
                                ? "not a directory (or a symbolic link)"
                                : String(cString: strerror(e)))))
            }
            fd = next
        }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_uid == 0 else {
            close(fd)
            return .failure(AttemptLedgerError("\(directory): not owned by root"))
        }
        guard st.st_mode & 0o077 == 0 else {
            close(fd)
            return .failure(
                AttemptLedgerError("\(directory): mode \(String(st.st_mode & 0o7777, radix: 8)), must be 0700"))
        }
        return .success(fd)
    }

    /// Nil when a directory on the way is root's and closed to other writers (or sticky).
    private static func checkParent(_ fd: Int32, _ name: String) -> String? {
        SafeFile.rootDirectoryProblem(fd, name)
    }

    // MARK: - The record

    /// The record's descriptor, and why the entry found was replaced (nil when it was fine).
    private func openRecord(_ dir: Int32, _ name: String, _ path: String) -> Result<
        (Int32, String?), AttemptLedgerError
    > {
        var fd = fa_openat(dir, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0)
        if fd < 0 && fa_errno() == ENOENT {
            switch create(dir, name, path, AttemptRecord()) {
            case let .success(made?): return .success((made, nil))
            case .success(nil):
                // Another login made it a moment ago: theirs is opened and checked.
                fd = fa_openat(dir, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0)
            case let .failure(why): return .failure(why)
            }
        }
        guard fd >= 0 else {
            let e = fa_errno()
            let why = e == ELOOP ? "a symbolic link" : e == EISDIR ? "a directory" : String(cString: strerror(e))
            return replace(dir, name, path, why: why)
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            close(fd)
            return .failure(AttemptLedgerError("\(path): cannot stat"))
        }
        let problem: String?
        switch true {
        case FileType.of(st.st_mode) != FileType.regular: problem = "not a regular file"
        case st.st_uid != 0: problem = "owned by uid \(st.st_uid)"
        case st.st_mode & 0o077 != 0: problem = "mode \(String(st.st_mode & 0o7777, radix: 8))"
        case st.st_nlink != 1: problem = "\(st.st_nlink) links"
        default: problem = nil
        }
        guard let problem else { return .success((fd, nil)) }
        close(fd)
        return replace(dir, name, path, why: problem)
    }

    /// Removes an entry that is not a record we can believe and makes one at the limit.
    private func replace(_ dir: Int32, _ name: String, _ path: String, why: String) -> Result<
        (Int32, String?), AttemptLedgerError
    > {
        if unlinkat(dir, name, 0) != 0 && fa_errno() != ENOENT && unlinkat(dir, name, AT_REMOVEDIR) != 0
            && fa_errno() != ENOENT
        {
            return .failure(
                AttemptLedgerError(
                    "\(path): \(why), and it cannot be removed: \(String(cString: strerror(fa_errno())))"))
        }
        switch create(dir, name, path, AttemptLimit.atTheLimit(now: nowMilliseconds())) {
        case let .success(made?): return .success((made, why))
        case .success(nil):
            return .failure(AttemptLedgerError("\(path): \(why), and another login replaced it at the same moment"))
        case let .failure(failure): return .failure(failure)
        }
    }

    /// A new record, root 0600, holding `record` in its full width from the start, and
    /// locked; nil when something exists under that name already.
    ///
    /// Written under a name no user can have (`NAME#new.PID`), locked, then moved to its name
    /// only if that is still free (renameat2 RENAME_NOREPLACE): another login that opens the
    /// record finds it whole and waits for the lock. Made in place, an su that opened it
    /// between its creation and its first write read an empty file, took it for a foreign
    /// one and set the user at the limit (seen with four hosts starting at once). Drafts of
    /// hosts that ended before moving theirs are removed first (`removeStaleDrafts`).
    private func create(_ dir: Int32, _ name: String, _ path: String, _ record: AttemptRecord) -> Result<
        Int32?, AttemptLedgerError
    > {
        let draft = name + "#new.\(getpid())"
        removeStaleDrafts(dir)
        let fd = fa_openat(dir, draft, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0o600)
        guard fd >= 0 else {
            return .failure(AttemptLedgerError("cannot create \(path): \(String(cString: strerror(fa_errno())))"))
        }
        guard fa_flock(fd, LOCK_EX | LOCK_NB) == 0, fchown(fd, 0, 0) == 0, fchmod(fd, 0o600) == 0,
            write(fd, record, path) == nil
        else {
            let e = fa_errno()
            close(fd)
            _ = unlinkat(dir, draft, 0)
            return .failure(AttemptLedgerError("cannot write \(path): \(String(cString: strerror(e)))"))
        }
        guard fa_renameat_noreplace(dir, draft, dir, name) == 0 else {
            let e = fa_errno()
            close(fd)
            _ = unlinkat(dir, draft, 0)
            if e == EEXIST { return .success(nil) }
            return .failure(AttemptLedgerError("cannot create \(path): \(String(cString: strerror(e)))"))
        }
        return .success(fd)
    }

    /// Most directory entries read when looking for stale drafts.
    static let draftScanLimit = 4096

    /// Removes drafts (`NAME#new.PID`) whose host ended between making and moving them (a
    /// caller may kill su at that moment, again and again, to fill the folder), and one of
    /// this process's own. Looked for only when a record is made; at most `draftScanLimit`
    /// entries are read. A pid taken again by a live process keeps its draft until it ends.
    private func removeStaleDrafts(_ dir: Int32) {
        let copy = dup(dir)
        guard copy >= 0 else { return }
        guard let stream = fdopendir(copy) else {
            close(copy)
            return
        }
        var stale: [String] = []
        var read = 0
        while read < Self.draftScanLimit, let entry = readdir(stream) {
            read += 1
            let entryName = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            let parts = entryName.split(separator: "#", maxSplits: 1)
            guard parts.count == 2, parts[1].hasPrefix("new."), let pid = Int32(parts[1].dropFirst(4)), pid > 0
            else { continue }
            if pid == getpid() || (kill(pid, 0) != 0 && fa_errno() == ESRCH) { stale.append(entryName) }
        }
        closedir(stream)
        for entryName in stale { _ = unlinkat(dir, entryName, 0) }
    }

    private func lock(_ fd: Int32) -> Bool {
        let deadline = MonotonicInstant.now().adding(milliseconds: lockMilliseconds)
        while true {
            if fa_flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            guard fa_errno() == EWOULDBLOCK || fa_errno() == EINTR, !deadline.hasPassed else { return false }
            var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
            _ = nanosleep(&pause, nil)
        }
    }

    /// True when `name` in the directory is still the file open as `fd`.
    private func stillNamed(_ dir: Int32, _ name: String, _ fd: Int32) -> Bool {
        var named = stat()
        var open = stat()
        guard fstatat(dir, name, &named, AT_SYMLINK_NOFOLLOW) == 0, fstat(fd, &open) == 0 else { return false }
        return named.st_dev == open.st_dev && named.st_ino == open.st_ino
    }

    private func readChangeWrite(
        _ fd: Int32, _ path: String, _ replaced: String?,
        _ change: (inout AttemptRecord) -> Void
    ) -> Result<AttemptEntry, AttemptLedgerError> {
        var buffer = [UInt8](repeating: 0, count: AttemptRecord.lineBytes + 1)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n >= 0 else { return .failure(AttemptLedgerError("\(path): \(String(cString: strerror(fa_errno())))")) }
        var why = replaced
        var record: AttemptRecord
        var unwritten = false
        if let parsed = AttemptRecord(line: String(decoding: buffer[0..<n], as: UTF8.self)) {
            record = parsed
        } else {
            // A torn or foreign content: not believed, and at the limit from now.
            why = why ?? "content not a record"
            record = AttemptLimit.atTheLimit(now: nowMilliseconds())
            unwritten = true
        }
        let found = record
        change(&record)
        if unwritten || record != found, let failed = write(fd, record, path) { return .failure(failed) }
        return .success(AttemptEntry(record: record, replaced: why))
    }

    /// Writes the record's line at offset 0 (always the same length); nil when done.
    private func write(_ fd: Int32, _ record: AttemptRecord, _ path: String) -> AttemptLedgerError? {
        let bytes = Array(record.line.utf8)
        let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        guard n == bytes.count else {
            return AttemptLedgerError(
                "cannot write \(path): \(n < 0 ? String(cString: strerror(fa_errno())) : "short write")")
        }
        if ftruncate(fd, off_t(bytes.count)) != 0 {
            return AttemptLedgerError("cannot write \(path): \(String(cString: strerror(fa_errno())))")
        }
        return nil
    }
}

/// CLOCK_BOOTTIME (7 on Linux): monotonic, and it counts the time suspended.
private let clockBoottime = clockid_t(7)
