import FingerAuthApproval
import FingerAuthCore
import FingerAuthLoginDomain
import FingerAuthSystem

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauth approve`: remote approval decided from a terminal on the workstation — the
/// user's pending request shown as the person must see it, their finger on this reader,
/// the decision signed by their device key and POSTed (`ApprovalClient`, which the resident
/// watcher uses too).
enum ApproveCommand {
    static let usage = """
        usage: fingerauth approve [--user U] [--wait SECONDS] [--deny] [--yes] [--config F] [--state-dir D]
          Remote approval, decided on this workstation: shows the user's pending request (who, which
          service on which host, from where, and the code that host shows), waiting up to --wait
          seconds (default 30; 0: only look) for one when none is pending. Then asks for the user's
          finger on this reader, as a login here would, and approves the request with a decision
          signed by the user's device key (iss host_id, else the host name).
          --deny  "Not me": denies it without a finger; the authenticator then mutes the user's
                  requests for its approval-mute (20 minutes by default)
          --yes   do not ask before denying (needed for --deny without a terminal)
          Tokens are dated by the authenticator's clock (said when this one is over a minute off).
          Needs root. Exit status: 0 approved (with --deny: denied); 1 otherwise (nothing to
          approve, no match, refused, the authenticator unreachable); 2 wrong usage.
        """

    static let defaultWait = 30
    static let waitRange = 0...3600

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(
            words, valued: Context.commonOptions.union(["wait"]), switches: ["deny", "yes"])
        var wait = defaultWait
        if let given = args["wait"] {
            guard let seconds = Int(given), waitRange.contains(seconds) else {
                throw UsageError(message: "--wait must be a number of seconds from 0 to 3600")
            }
            wait = seconds
        }
        let deny = args.has("deny")
        let confirm = deny && !args.has("yes")
        if confirm && isatty(STDIN_FILENO) == 0 {
            throw UsageError(message: "--deny without a terminal needs --yes")
        }
        try Context.requireRoot("approve")
        let context = try Context(args, requireURL: true)
        let user = context.user
        let key = try context.loadDeviceKey()
        let address = AuthenticatorAddress(options: context.options)
        var client = address.approvalClient(user: user, key: key)

        if case let .failure(failure) = client.learnClock() { throw CommandError(failure.message, unreachable: true) }
        let pending: PendingApproval
        switch client.awaitPending(seconds: wait) {
        case let .failure(failure): throw CommandError(failure.message)
        case .success(nil):
            say("nothing to approve: no request for \(user)" + (wait > 0 ? " within \(wait) s" : " pending"))
            return 1
        case let .success(found?): pending = found
        }
        if client.clock.isOff {
            say(
                "note: \(client.clock.description); signing by the authenticator's clock (fix it: timedatectl set-ntp true)"
            )
        }
        let left = pending.expires &- client.clock.now(localNow: SystemClock().now())
        say("\(pending.sentence) (expires in \(max(left, 0)) s)")

        if deny {
            if confirm && !ask("deny it (Not me)? \(user)'s requests will be muted for a while [y/N] ") {
                say("left pending: nothing decided")
                return 1
            }
            return report(client.decide(pending, .deny), pending)
        }
        var decided: Int32 = 1
        switch ApprovalFinger.read(
            user: user, options: context.options, issuer: address.issuer, show: { say($0) },
            whenMatched: { decided = report(client.decide(pending, .approve), pending) })
        {
        case .noMatch:
            say("no match: \(pending.host)'s request stays pending")
            return 1
        case let .failed(why):
            say("no finger read: \(why); \(pending.host)'s request stays pending")
            return 1
        case .matched:
            return decided
        }
    }

    /// The outcome in one line; 0 for a decision taken.
    static func report(_ result: Result<DecisionAnswer, ApprovalFailure>, _ shown: PendingApproval) -> Int32 {
        let outcome = DecisionOutcome(result, shown)
        say(outcome.line)
        return outcome.decided ? 0 : 1
    }

    /// A yes/no question on the terminal; yes only for `y` or `yes`.
    static func ask(_ question: String) -> Bool {
        print(question, terminator: "")
        fflush(nil)
        guard let answer = readLine(strippingNewline: true) else { return false }
        let word = answer.lowercased().filter { !$0.isWhitespace }
        return word == "y" || word == "yes"
    }
}
