import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthReader
import FingerAuthSystem

/// `fingerauth list`: the fingers enrolled for a user.
enum ListCommand {
    static let usage = """
        usage: fingerauth list [--user U] [--json] [--config F] [--state-dir D]
          Prints one enrolled finger per line (or {"user","fingers"} with --json).
          Needs root. Exit status: 0 listed (also when none), 1 failed, 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(words, valued: Context.commonOptions, switches: ["json"])
        try Context.requireRoot("list")
        let context = try Context(args, requireURL: false)
        let fingers = try enrolledFingers(context)
        if args.has("json") {
            say(
                JSONEncoding.encode(
                    .object([
                        ("user", .string(context.user)),
                        ("fingers", .array(fingers.map { .string($0) })),
                    ])))
        } else if fingers.isEmpty {
            say("\(context.user) has no enrolled fingers (enroll one: fingerauth enroll --user \(context.user))")
        } else {
            for finger in fingers { say(finger) }
        }
        return 0
    }

    /// The finger names with a print file, sorted; refuses a prints directory that is not
    /// root's and closed to others.
    static func enrolledFingers(_ context: Context) throws(CommandError) -> [String] {
        let directory = context.paths.printsDirectory
        guard SafeFile.exists(directory) else { return [] }
        do {
            try SafeFile.checkDirectory(directory, rule: .privateDirectory)
        } catch {
            throw CommandError("\(error) (fix: chown root:root \(directory) && chmod 700 \(directory))")
        }
        return SafeFile.list(directory).compactMap { name -> String? in
            guard name.hasSuffix(StatePaths.printSuffix) else { return nil }
            let finger = String(name.dropLast(StatePaths.printSuffix.count))
            return Finger(rawValue: finger) == nil ? nil : finger
        }
    }
}
