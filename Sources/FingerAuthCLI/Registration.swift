import FingerAuthCore
import FingerAuthSystem

/// The user's `registration` file (root 0600): which key was registered where and when,
/// and whether this host revoked it since. `key = value` lines.
struct Registration: Equatable {
    var kid: String
    var authenticator: String
    var time: Int64
    var status: String

    /// Reads the record; nil when there is none. Unsafe or unreadable files are errors.
    static func load(_ path: String) throws(SafeFileError) -> Registration? {
        let bytes: [UInt8]
        do {
            bytes = try SafeFile.read(path, rule: .secret)
        } catch {
            if case .missing = error { return nil }
            throw error
        }
        var values: [String: String] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            let key = line[..<eq].filter { $0 != " " }
            let value = line[line.index(after: eq)...].drop(while: { $0 == " " })
            values[String(key)] = String(value)
        }
        guard let kid = values["kid"], !kid.isEmpty else { return nil }
        return Registration(
            kid: kid, authenticator: values["authenticator"] ?? "",
            time: Int64(values["time"] ?? "") ?? 0, status: values["status"] ?? "active")
    }

    /// `status` when it is a plain word (`active`, `pending`, or another lower-case token of
    /// at most 32 letters, digits, `_` and `-`), else nil.
    static func statusWord(_ status: String) -> String? {
        let bytes = Array(status.utf8)
        guard !bytes.isEmpty, bytes.count <= 32, let first = bytes.first, first >= 0x61 && first <= 0x7a,
            bytes.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f || $0 == 0x2d })
        else {
            return nil
        }
        return status
    }

    /// Writes the record atomically, root 0600.
    func save(_ path: String) throws(SafeFileError) {
        let text = "kid = \(kid)\nauthenticator = \(authenticator)\ntime = \(time)\nstatus = \(status)\n"
        try SafeFile.writeAtomically(path, Array(text.utf8), mode: 0o600)
    }
}
