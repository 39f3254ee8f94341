import FingerAuthCore
import FingerAuthReader
import FingerAuthSystem

/// `fingerauth remove --finger NAME | --all`: deletes prints (the device key stays).
enum RemoveCommand {
    static let usage = """
        usage: fingerauth remove (--finger NAME | --all) [--user U] [--config F] [--state-dir D]
          Deletes one print, or all of the user's prints. The device key and its registration
          stay (fingerauth reset removes everything). Needs root.
          Exit status: 0 removed, 1 failed (e.g. that finger is not enrolled), 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(words, valued: Context.commonOptions.union(["finger"]), switches: ["all"])
        let all = args.has("all")
        switch (args["finger"], all) {
        case (nil, false): throw UsageError(message: "say which print to remove: --finger NAME or --all")
        case (.some, true): throw UsageError(message: "--finger and --all cannot be used together")
        default: break
        }
        if let name = args["finger"], Finger(rawValue: name) == nil {
            throw UsageError(message: "unknown finger '\(name)'")
        }
        try Context.requireRoot("remove")
        let context = try Context(args, requireURL: false)
        let enrolled = try ListCommand.enrolledFingers(context)
        let targets: [String]
        if let name = args["finger"] {
            guard enrolled.contains(name) else {
                let have = enrolled.isEmpty ? "none" : enrolled.joined(separator: ", ")
                throw CommandError("\(context.user) has no print for \(name) (enrolled: \(have))")
            }
            targets = [name]
        } else {
            targets = enrolled
        }
        SensorPrints.delete(context, fingers: targets)
        for finger in targets {
            do {
                try SafeFile.remove(context.paths.printFile(finger: finger))
            } catch {
                throw CommandError("cannot remove \(finger): \(error)")
            }
            say("removed \(finger) for \(context.user)")
        }
        if targets.isEmpty { say("\(context.user) had no enrolled fingers") }
        if all || enrolled.count == targets.count {
            say("\(context.user) has no enrolled fingers left: fingerprint login is off for \(context.user)")
        }
        return 0
    }
}
