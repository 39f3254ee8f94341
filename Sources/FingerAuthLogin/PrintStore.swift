import FingerAuthCore
import FingerAuthReader
import FingerAuthSystem

/// The user's enrolled prints on disk: `<state>/users/<user>/prints/<finger>.fpt`, the user
/// directory root-owned 0700, each print root-owned 0600 and at most 16 KiB.
struct PrintStore {
    let stateDirectory: String
    let user: String

    /// Largest accepted print file; a virtual print is ~60 bytes, a real one a few KiB.
    static let maxPrintBytes = 16 * 1024
    static let printRule = FileRule(owner: 0, forbiddenBits: 0o077, maxBytes: maxPrintBytes)
    /// The prints directory sits inside the 0700 user directory: root-owned, not writable by others.
    static let printsDirectoryRule = FileRule(owner: 0, forbiddenBits: 0o022, maxBytes: 0)
    static let suffix = ".fpt"

    var userDirectory: String { stateDirectory + "/users/" + user }
    var printsDirectory: String { userDirectory + "/prints" }

    func path(for finger: Finger) -> String { printsDirectory + "/" + finger.rawValue + PrintStore.suffix }

    /// Every enrolled print, by finger name. No print → `.noPrints`; a file that breaks a rule
    /// → `.badPrint` naming the file and the rule (one unsafe print refuses them all: the
    /// admin has to look).
    func load() throws(ReaderError) -> [(finger: String, data: [UInt8])] {
        do {
            try SafeFile.checkDirectory(userDirectory, rule: .privateDirectory)
        } catch .missing {
            throw ReaderError(.noPrints, "\(user) has no enrolled finger")
        } catch {
            throw ReaderError(.noPrints, "refused: \(error.description)")
        }
        do {
            try SafeFile.checkDirectory(printsDirectory, rule: PrintStore.printsDirectoryRule)
        } catch .missing {
            throw ReaderError(.noPrints, "\(user) has no enrolled finger")
        } catch {
            throw ReaderError(.noPrints, "refused: \(error.description)")
        }
        var prints: [(finger: String, data: [UInt8])] = []
        for name in SafeFile.list(printsDirectory) where name.hasSuffix(PrintStore.suffix) {
            guard let finger = Finger(rawValue: String(name.dropLast(PrintStore.suffix.count))) else { continue }
            let path = printsDirectory + "/" + name
            let data: [UInt8]
            do {
                data = try SafeFile.read(path, rule: PrintStore.printRule)
            } catch {
                throw ReaderError(.badPrint, "refused: \(error.description)")
            }
            try IsolatedPrintCheck.check(finger: finger.rawValue, data: data)
            prints.append((finger: finger.rawValue, data: data))
        }
        guard !prints.isEmpty else { throw ReaderError(.noPrints, "\(user) has no enrolled finger") }
        return prints
    }

    /// Stores an enrolled print (0600, atomically), making the user and prints directories
    /// 0700 if needed. Returns the path.
    func save(_ data: [UInt8], for finger: Finger) throws(ReaderError) -> String {
        let target = path(for: finger)
        do {
            try SafeFile.makeDirectory(userDirectory, mode: 0o700)
            try SafeFile.makeDirectory(printsDirectory, mode: 0o700)
            try SafeFile.writeAtomically(target, data, mode: 0o600)
        } catch {
            throw ReaderError(.deviceError, "cannot store the print: \(error.description)")
        }
        return target
    }
}
