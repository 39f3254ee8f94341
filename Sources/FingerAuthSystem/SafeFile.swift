import CSystem

/// Why a file was refused. The text names the path and the rule, never the content.
package enum SafeFileError: Error, Equatable, Sendable, CustomStringConvertible {
    case missing(String)
    case symlink(String)
    case notRegular(String)
    case notDirectory(String)
    case wrongOwner(String, uid: UInt32)
    case insecureMode(String, mode: UInt32)
    case tooLarge(String, limit: Int)
    case io(String, errno: Int32)

    package var description: String {
        switch self {
        case let .missing(p): return "\(p): does not exist"
        case let .symlink(p): return "\(p): is a symbolic link"
        case let .notRegular(p): return "\(p): is not a regular file"
        case let .notDirectory(p): return "\(p): is not a directory"
        case let .wrongOwner(p, uid): return "\(p): owned by uid \(uid), must be owned by root"
        case let .insecureMode(p, mode): return "\(p): mode \(String(mode & 0o7777, radix: 8)) is too open"
        case let .tooLarge(p, limit): return "\(p): larger than \(limit) bytes"
        case let .io(p, e): return "\(p): \(String(cString: strerror(e)))"
        }
    }
}

/// What a file must satisfy before its content is trusted.
package struct FileRule: Sendable {
    /// Required owner; nil accepts any owner (only for files a user may own).
    package var owner: UInt32?
    /// Permission bits that must be clear (0o077 for secrets, 0o022 for configuration).
    package var forbiddenBits: UInt32
    /// Largest accepted size in bytes.
    package var maxBytes: Int

    package init(owner: UInt32? = 0, forbiddenBits: UInt32, maxBytes: Int) {
        self.owner = owner
        self.forbiddenBits = forbiddenBits
        self.maxBytes = maxBytes
    }

    /// Root-owned, 0600 or stricter, at most 64 KiB: keys, prints, tokens.
    package static let secret = FileRule(forbiddenBits: 0o077, maxBytes: 64 * 1024)
    /// Root-owned, not group/world writable, at most 64 KiB: configuration.
    package static let config = FileRule(forbiddenBits: 0o022, maxBytes: 64 * 1024)
    /// Root-owned directory closed to others: per-user state.
    package static let privateDirectory = FileRule(forbiddenBits: 0o077, maxBytes: 0)
}

/// Files opened the careful way: O_NOFOLLOW|O_CLOEXEC, checked with fstat (type, owner,
/// mode), size-capped, and written atomically (temporary file, fsync, rename).
package enum SafeFile {
    /// The whole content of a regular file that satisfies `rule`.
    package static func read(_ path: String, rule: FileRule) throws(SafeFileError) -> [UInt8] {
        let fd = fa_open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0)
        guard fd >= 0 else { throw openError(path, fa_errno()) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .io(path, errno: fa_errno()) }
        guard FileType.of(st.st_mode) == FileType.regular else { throw .notRegular(path) }
        try check(path, st: st, rule: rule)
        guard st.st_size <= rule.maxBytes else { throw .tooLarge(path, limit: rule.maxBytes) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { fa_read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if fa_errno() == EINTR { continue }
                throw .io(path, errno: fa_errno())
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
            // The file may grow between fstat and read: the cap holds on what was read.
            guard out.count <= rule.maxBytes else { throw .tooLarge(path, limit: rule.maxBytes) }
        }
        return out
    }

    /// Checks that `path` is a directory (not a link) that satisfies `rule`'s owner and mode.
    package static func checkDirectory(_ path: String, rule: FileRule) throws(SafeFileError) {
        let fd = fa_open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
        guard fd >= 0 else {
            let e = fa_errno()
            if e == ENOTDIR {
                // O_NOFOLLOW|O_DIRECTORY on a link says ENOTDIR: name the real reason.
                var st = stat()
                if lstat(path, &st) == 0 && FileType.of(st.st_mode) == FileType.symlink { throw .symlink(path) }
                throw .notDirectory(path)
            }
            throw openError(path, e)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .io(path, errno: fa_errno()) }
        try check(path, st: st, rule: rule)
    }

    /// True when something (of any type) exists at `path`, links not followed.
    package static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Writes `bytes` to `path` atomically with `mode`: a new temporary file in the same
    /// directory, fsync, rename over the target, fsync of the directory. Not `durable`: no
    /// fsync (a cache that may be lost in a crash, written on a path that must not wait).
    package static func writeAtomically(
        _ path: String, _ bytes: [UInt8], mode: UInt32, durable: Bool = true
    ) throws(SafeFileError) {
        // In a PAM host the caller's RLIMIT_FSIZE holds: past it a write raises SIGXFSZ.
        guard FileSizeLimit.permits(size: bytes.count) else { throw .io(path, errno: EFBIG) }
        let dir = directoryName(of: path)
        var attempt = 0
        var fd: Int32 = -1
        var temp = ""
        while fd < 0 {
            attempt += 1
            temp = "\(path).tmp.\(getpid()).\(attempt)"
            fd = fa_open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(mode))
            if fd < 0 && (fa_errno() != EEXIST || attempt > 100) { throw .io(temp, errno: fa_errno()) }
        }
        var ok = false
        defer {
            if fd >= 0 { close(fd) }
            if !ok { unlink(temp) }
        }
        guard fchmod(fd, mode_t(mode)) == 0 else { throw .io(temp, errno: fa_errno()) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                fa_write(fd, raw.baseAddress.map { $0 + written }, raw.count - written)
            }
            if n < 0 {
                if fa_errno() == EINTR { continue }
                throw .io(temp, errno: fa_errno())
            }
            written += n
        }
        guard !durable || fsync(fd) == 0 else { throw .io(temp, errno: fa_errno()) }
        close(fd)
        fd = -1
        guard rename(temp, path) == 0 else { throw .io(path, errno: fa_errno()) }
        ok = true
        guard durable else { return }
        let dfd = fa_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    /// Creates `path` as a directory with `mode` if missing (parents included, 0755), and
    /// then enforces `mode` on it. Refuses links.
    package static func makeDirectory(_ path: String, mode: UInt32) throws(SafeFileError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o755) != 0 && fa_errno() != EEXIST { throw .io(prefix, errno: fa_errno()) }
        }
        var st = stat()
        guard lstat(path, &st) == 0 else { throw .io(path, errno: fa_errno()) }
        guard FileType.of(st.st_mode) == FileType.directory else { throw .notDirectory(path) }
        guard chmod(path, mode_t(mode)) == 0 else { throw .io(path, errno: fa_errno()) }
    }

    /// Removes a file; a missing file is not an error.
    package static func remove(_ path: String) throws(SafeFileError) {
        if unlink(path) != 0 && fa_errno() != ENOENT { throw .io(path, errno: fa_errno()) }
    }

    /// Nil when the directory open as `fd` is root-owned and closed to writers other than
    /// root (or sticky); else the reason, starting with `name`.
    package static func rootDirectoryProblem(_ fd: Int32, _ name: String) -> String? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return "\(name): cannot stat" }
        guard st.st_uid == 0 else { return "\(name): directory not owned by root" }
        if st.st_mode & 0o022 != 0 && st.st_mode & 0o1000 == 0 {
            return "\(name): directory writable by group or others"
        }
        return nil
    }

    /// Names in a directory (without "." and ".."), sorted; empty when it does not exist.
    package static func list(_ directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let dir = String(path[..<slash])
        return dir.isEmpty ? "/" : dir
    }

    private static func check(_ path: String, st: stat, rule: FileRule) throws(SafeFileError) {
        if let owner = rule.owner, st.st_uid != owner { throw .wrongOwner(path, uid: st.st_uid) }
        if UInt32(st.st_mode) & rule.forbiddenBits != 0 { throw .insecureMode(path, mode: UInt32(st.st_mode)) }
    }

    private static func openError(_ path: String, _ e: Int32) -> SafeFileError {
        switch e {
        case ENOENT: return .missing(path)
        case ELOOP: return .symlink(path)
        default: return .io(path, errno: e)
        }
    }
}
