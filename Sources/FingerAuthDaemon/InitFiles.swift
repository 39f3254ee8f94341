import FingerAuthCore
import FingerAuthCrypto
import FingerAuthStore
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// The files `fingerauthd init` makes or changes: the database's directory (and the
/// database files already in it) handed to the service's user, the TLS files, and the
/// `key = value` lines of the configuration file.
enum InitFiles {
    /// The database files SQLite keeps beside `database`.
    static func databaseFiles(_ database: String) -> [String] {
        [database, database + "-wal", database + "-shm", database + "-journal"]
    }

    /// The text of the configuration file, nil when there is none (`ConfigurationFile`:
    /// root's, not writable by group or others).
    static func readConfig(_ path: String) throws(InitError) -> String? {
        do {
            return try ConfigurationFile.read(path)
        } catch {
            throw InitError("configuration \(error)")
        }
    }

    /// The directory of `database`, made (mode 0700) or handed to `owner`, and the database
    /// files in it handed over too — what a `serve` run as root left root's. A directory of
    /// another owner that holds anything but the database is left alone: the database
    /// needs a directory of its own.
    static func prepareStateDirectory(of database: String, owner: (uid: uid_t, gid: gid_t), user: String)
        throws(InitError) -> [String]
    {
        let directory = DatabaseDirectory.directory(of: database)
        var st = stat()
        var lines: [String] = []
        if lstat(directory, &st) != 0 {
            guard errno == ENOENT else { throw InitError("\(directory): \(String(cString: strerror(errno)))") }
            let parent = DatabaseDirectory.directory(of: directory)
            if !SafeFile.exists(parent) {
                do { try SafeFile.makeDirectory(parent, mode: 0o755) } catch { throw InitError("\(error)") }
            }
            guard mkdir(directory, 0o700) == 0 else {
                throw InitError("cannot create \(directory): \(String(cString: strerror(errno)))")
            }
            lines.append("state directory \(directory): created, \(user)'s, mode 0700")
        } else {
            guard (st.st_mode & S_IFMT) == S_IFDIR else {
                throw InitError("\(directory) is not a directory (or is a symbolic link)")
            }
            let names = Set(databaseFiles(database).map { String($0.dropFirst(directory.count + 1)) })
            let strangers = SafeFile.list(directory).filter { !names.contains($0) }
            if st.st_uid != owner.uid && !strangers.isEmpty {
                throw InitError(
                    "\(directory) belongs to \(DatabaseDirectory.userName(st.st_uid)) and holds other files "
                        + "(\(strangers.prefix(3).joined(separator: ", "))): give the database a directory of its own (--db)"
                )
            }
            let mode = st.st_mode & 0o7777
            let modeText = mode == 0o700 ? "mode 0700" : "mode now 0700 (was 0\(String(mode, radix: 8)))"
            lines.append(
                st.st_uid == owner.uid
                    ? "state directory \(directory): \(user)'s already, \(modeText)"
                    : "state directory \(directory): was \(DatabaseDirectory.userName(st.st_uid))'s, now \(user)'s, \(modeText)"
            )
        }
        guard lchown(directory, owner.uid, owner.gid) == 0, chmod(directory, 0o700) == 0 else {
            throw InitError("cannot give \(directory) to \(user): \(String(cString: strerror(errno)))")
        }
        for file in databaseFiles(database) where lstat(file, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFREG else { throw InitError("\(file) is not a regular file") }
            guard st.st_uid != owner.uid else { continue }
            guard lchown(file, owner.uid, owner.gid) == 0 else {
                throw InitError("cannot give \(file) to \(user): \(String(cString: strerror(errno)))")
            }
            lines.append("database file \(file): was \(DatabaseDirectory.userName(st.st_uid))'s, now \(user)'s")
        }
        return lines
    }

    /// An existing certificate and key at init's paths: kept when they are what init would
    /// make now for `subject` (a reinstall after a purge keeps /etc/fingerauthd), the key
    /// handed to `owner`, mode 0600; else an error that names the one command that replaces
    /// them.
    static func reuseCertificate(
        _ certificatePath: String, keyPath: String, subject: ServerCertificate.Subject, issuer: CertificateIssuer?,
        request: InitCommand.Request, owner: (uid: uid_t, gid: gid_t)
    ) throws(InitError) -> [String] {
        let replace =
            "to make a new key and certificate (each host's cafile copy must then be replaced too): "
            + request.again(adding: "--force")
        let found: CertificateOnDisk
        do {
            let certificatePEM = try SafeFile.read(
                certificatePath, rule: FileRule(owner: nil, forbiddenBits: 0o022, maxBytes: 256 * 1024))
            let keyPEM = try SafeFile.read(
                keyPath, rule: FileRule(owner: nil, forbiddenBits: 0o077, maxBytes: 64 * 1024))
            found = try CertificateOnDisk(
                certificatePEM: certificatePEM, keyPEM: keyPEM, subject: subject, issuer: issuer)
        } catch {
            throw InitError(
                "cannot reuse the certificate \(certificatePath) and its key \(keyPath): \(error); \(replace)")
        }
        if let why = found.refusal(for: subject, issuer: request.caCertificate) {
            throw InitError("\(certificatePath) exists, but \(why); \(replace)")
        }
        var st = stat()
        guard lstat(keyPath, &st) == 0 else {
            throw InitError("\(keyPath): \(String(cString: strerror(errno)))")
        }
        let before = st.st_uid
        guard lchown(keyPath, owner.uid, owner.gid) == 0, chmod(keyPath, 0o600) == 0 else {
            throw InitError("cannot give \(keyPath) to \(request.user): \(String(cString: strerror(errno)))")
        }
        let signer = request.caCertificate.map { "signed by the CA \($0)" } ?? "self-signed"
        return [
            "certificate \(certificatePath): kept (made before): ECDSA P-256, \(signer), "
                + "for \(InitCommand.subjectText(subject)), valid until \(found.expiry); --force makes a new one",
            before == owner.uid
                ? "key \(keyPath): kept, \(request.user)'s already, mode 0600"
                : "key \(keyPath): kept, was \(DatabaseDirectory.userName(before))'s, now \(request.user)'s, mode 0600",
        ]
    }

    /// Writes `bytes` atomically with `mode`, then gives the file to `owner`; the directory is
    /// made (root, 0755) when missing.
    static func write(_ path: String, _ bytes: [UInt8], mode: UInt32, owner: (uid: uid_t, gid: gid_t)) throws(InitError)
    {
        let directory = DatabaseDirectory.directory(of: path)
        do {
            if !SafeFile.exists(directory) { try SafeFile.makeDirectory(directory, mode: 0o755) }
            try SafeFile.writeAtomically(path, bytes, mode: mode)
        } catch {
            throw InitError("cannot write \(path): \(error)")
        }
        guard lchown(path, owner.uid, owner.gid) == 0 else {
            throw InitError("cannot give \(path) its owner: \(String(cString: strerror(errno)))")
        }
    }

    /// The configuration with `settings` in it: a new file (root 0644), or the existing one
    /// with each changed key's line replaced (or added at the end). Says what it did.
    static func writeConfig(_ path: String, text: String?, settings: [String: String], existing: [String: String])
        throws(InitError) -> String
    {
        let order = ["listen", "audience", "tls-cert", "tls-key", "db"]
        let changed = order.filter { key in settings[key].map { $0 != existing[key] } ?? false }
        guard !changed.isEmpty else { return "configuration \(path): as it was" }
        var lines: [String]
        if let text {
            lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if lines.last == "" { lines.removeLast() }
        } else {
            lines = [
                "# \(path): settings of `fingerauthd serve` (fingerauthd(8)), made by `fingerauthd init`.",
                "# `key = value` lines; every key is also a command-line flag (--key value), which wins.",
            ]
        }
        for key in changed {
            guard let value = settings[key] else { continue }
            let line = "\(key) = \(value)"
            if let index = lines.firstIndex(where: { keyOf($0) == key }) {
                lines[index] = line
            } else {
                lines.append(line)
            }
        }
        try write(path, Array((lines.joined(separator: "\n") + "\n").utf8), mode: 0o644, owner: (0, 0))
        let what = changed.map { "\($0) = \(settings[$0] ?? "")" }.joined(separator: ", ")
        return "configuration \(path): \(text == nil ? "written" : "updated"): \(what)"
    }

    /// The key of a `key = value` line (`ConfigLines`); nil for comments and blank lines.
    private static func keyOf(_ line: String) -> String? {
        (try? ConfigLines.parse(line, name: ""))?.first?.key
    }
}
