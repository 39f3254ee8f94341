import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// The lines `fingerauth trial start` adds to the configuration file and `trial stop` takes
/// out again, between two marker comments: `virtual_reader`; `reader = libfprint` (the
/// virtual reader is libfprint's: an fprintd installed on the machine must not take the
/// trial's enrollment); `lid = ignore` (the virtual reader is no built-in reader that a
/// closed lid covers). Later lines win, so these win over the admin's. Nothing else of the
/// file is touched; a file without the markers has no trial.
enum TrialConfig {
    static let begin =
        "# >>> fingerauth trial: libfprint's virtual reader plays the fingerprint reader;"
        + " `fingerauth trial stop` removes these lines"
    static let end = "# <<< fingerauth trial"

    /// `text` with the trial's lines added at the end.
    static func adding(socket: String, to text: String) -> String {
        var out = text
        if !out.isEmpty && !out.hasSuffix("\n") { out += "\n" }
        return out + "\(begin)\nreader = libfprint\nlid = ignore\nvirtual_reader = \(socket)\n\(end)\n"
    }

    /// `text` without the trial's lines; nil when it has none.
    static func removing(from text: String) -> String? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.firstIndex(where: { $0 == begin }),
            let last = lines[first...].firstIndex(where: { $0 == end })
        else { return nil }
        return (lines[..<first] + lines[(last + 1)...]).joined(separator: "\n")
    }

    static func isRunning(_ text: String) -> Bool { removing(from: text) != nil }

    /// The configuration file's text (`ConfigurationFile`: root's, not writable by others);
    /// "" when it does not exist.
    static func read(_ path: String) throws(CommandError) -> String {
        do {
            return try ConfigurationFile.read(path) ?? ""
        } catch {
            throw CommandError("\(error)")
        }
    }

    /// Writes the configuration back atomically, with the mode it had (root 0644, as the
    /// package ships it, for a new file).
    static func write(_ path: String, _ text: String) throws(CommandError) {
        var st = stat()
        let mode = lstat(path, &st) == 0 ? UInt32(st.st_mode) & 0o7777 : 0o644
        do {
            try SafeFile.writeAtomically(path, Array(text.utf8), mode: mode)
        } catch {
            throw CommandError("cannot write \(path): \(error)")
        }
    }
}
