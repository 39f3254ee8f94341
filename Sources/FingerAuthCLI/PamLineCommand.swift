import FingerAuthCore
import FingerAuthLoginDomain

/// `fingerauth pam-line [SERVICE]`: the line to put into `/etc/pam.d/SERVICE`, with the
/// configured options, and where it goes.
enum PamLineCommand {
    static let usage = """
        usage: fingerauth pam-line [SERVICE] [--json] [--config F]
          Prints the recommended auth line for SERVICE (default sudo) with the configured url
          (and conf= when --config names another file), then a comment saying where it goes.
          For a screen locker that calls PAM as the user (swaylock, i3lock, xsecurelock,
          hyprlock, kde, xscreensaver…) the comment says that fingerauth-agent must run.
          --json prints {"service","file","line","placement"}. Does not need root.
          Exit status: 0 printed, 1 configuration unusable, 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(
            words, valued: ["config", "state-dir", "pam-dir"], switches: ["json"], maxPositional: 1)
        let service = args.positional.first ?? "sudo"
        guard PortableWord.isValid(service) else { throw UsageError(message: "'\(service)' is not a PAM service name") }
        let options = try Context.loadOptions(args, requireURL: true)
        var words = ["auth", "sufficient", "pam_fingerauth.so"]
        if let url = options.url { words.append("url=" + url.text) }
        if let config = args["config"], config != Options.defaultConfigPath { words.append("conf=" + config) }
        if let dir = args["state-dir"] { words.append("state_dir=" + dir) }
        let line = words.joined(separator: "  ")
        let directory = args["pam-dir"] ?? PamServices.defaultDirectory
        let file = directory + "/" + service
        let placement = placementNote(service)
        if args.has("json") {
            say(
                JSONEncoding.encode(
                    .object([
                        ("service", .string(service)), ("file", .string(file)),
                        ("line", .string(line)), ("placement", .string(placement)),
                    ])))
        } else {
            say(line)
            say("# \(file): \(placement)")
        }
        return 0
    }

    private static func placementNote(_ service: String) -> String {
        let base =
            "put it before the password (@include common-auth); `sufficient` lets the password follow when the finger is not accepted"
        switch service {
        case "sshd":
            return base
                + "; remote sessions are skipped unless remote=allow is added (nobody sits at this host's reader)"
        case "common-auth":
            return
                "put it first: every service that includes common-auth then tries the finger (remote sessions are skipped)"
        default:
            if let locker = userLockers[service] {
                return
                    "put it first, before the file's `auth include login` or @include common-auth; \(locker) calls PAM as you, "
                    + "so the module asks fingerauth-agent, which must be running (as root: systemctl enable --now fingerauth-agent.socket)"
            }
            if let note = rootLockers[service] { return base + "; " + note }
            return base
        }
    }

    /// Screen lockers that call PAM as the user (their pam.d service names): the module asks
    /// the agent for them.
    static let userLockers: [String: String] = [
        "swaylock": "swaylock", "i3lock": "i3lock", "xsecurelock": "xsecurelock", "hyprlock": "hyprlock",
        "kde": "KDE's kscreenlocker", "xscreensaver": "xscreensaver", "cinnamon-screensaver": "cinnamon-screensaver",
        "mate-screensaver": "mate-screensaver", "xfce4-screensaver": "xfce4-screensaver", "physlock": "physlock",
    ]

    /// Lockers that reach PAM as root: the module starts the helper itself, no agent needed.
    static let rootLockers: [String: String] = [
        "vlock": "Debian's vlock-main is setuid root: the module runs as root there and needs no agent",
        "gdm-password": "GDM's lock screen authenticates in its root worker: no agent needed",
    ]
}
