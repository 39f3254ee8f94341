import FingerAuthCore
import FingerAuthHTTP
import FingerAuthLoginDomain
import FingerAuthOffline
import FingerAuthSystem

/// `fingerauth sync`: the host's offline sync with the authenticator, for one user or every
/// enrolled one — withdrawn grants dropped, offline logins uploaded, grant keys pinned. The
/// package's timer runs it every 15 minutes; a login does the same for its own user.
enum SyncCommand {
    static let usage = """
        usage: fingerauth sync [--user U] [--json] [--config F] [--state-dir D]
          Asks the authenticator which offline grants of this host still stand (a withdrawn one
          is dropped at once) and uploads the offline logins recorded since the last contact.
          Without --user: every user with state on this host. Needs root.
          Exit status: 0 synced (also when there was nothing to sync), 1 the authenticator
          could not be reached or refused, 2 wrong usage.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let args = try CommandArguments(words, valued: Context.commonOptions, switches: ["json"])
        try Context.requireRoot("sync")
        let options = try Context.loadOptions(args, requireURL: true)
        let authenticator = Authenticator(options: options)
        let users: [String]
        if let user = args["user"] {
            guard UserName.isValid(user) else { throw CommandError("'\(user)' is not a valid user name") }
            users = [user]
        } else {
            users = SafeFile.list(StatePaths(root: options.stateDirectory, user: "").usersDirectory).filter(
                UserName.isValid)
        }
        let books = users.map {
            OfflineBook(stateDirectory: options.stateDirectory, user: $0, host: authenticator.hostID)
        }
        let before = books.map { ($0.paths.user, grantState($0), $0.unsent().count) }
        guard let login = options.url?.text, let url = OfflineSync.url(forLogin: login) else {
            throw CommandError("the url does not end in /login: no offline sync beside it")
        }
        var synced = 0
        // One request per batch of records: a long offline trip may have more than one.
        for _ in 0..<64 {
            guard let body = OfflineSync.body(books) else { break }
            let response: HTTPResponse
            switch authenticator.send("POST", url, body: body) {
            case let .failure(failure):
                throw CommandError(
                    "\(failure.message) [\(failure.kind.rawValue)] (url \(url))", unreachable: failure.isNetworkEvidence
                )
            case let .success(answer): response = answer
            }
            guard response.status == 200,
                let json = try? JSONParser(maxBytes: 64 * 1024, maxDepth: 8).parse(response.body)
            else {
                throw CommandError("the authenticator answered \(response.status) at \(url)")
            }
            let unsentBefore = books.map { $0.unsent().count }.reduce(0, +)
            OfflineSync.apply(json, books: books, pins: GrantPins(stateDirectory: options.stateDirectory))
            if let now = GrantClock.read() { ClockFloor(stateDirectory: options.stateDirectory).raise(to: now.wall) }
            synced += 1
            let unsentAfter = books.map { $0.unsent().count }.reduce(0, +)
            if unsentAfter == 0 || unsentAfter >= unsentBefore { break }
        }
        var lines: [JSONValue] = []
        for (book, (user, grantBefore, unsentBefore)) in zip(books, before) {
            let grantAfter = grantState(book)
            let uploaded = unsentBefore - book.unsent().count
            let change = grantBefore != nil && grantAfter == nil ? "withdrawn, dropped" : grantAfter ?? "none"
            if args.has("json") {
                lines.append(
                    .object([
                        ("user", .string(user)), ("grant", .string(change)), ("uploaded", .integer(Int64(uploaded))),
                        ("left", .integer(Int64(book.unsent().count))),
                    ]))
            } else if grantBefore != nil || unsentBefore > 0 {
                say(
                    "\(user): offline grant \(change); \(uploaded) offline login(s) uploaded, \(book.unsent().count) left"
                )
            }
        }
        if args.has("json") {
            say(JSONEncoding.encode(.object([("requests", .integer(Int64(synced))), ("users", .array(lines))])))
        } else if synced == 0 {
            say("nothing to sync: no offline grant or offline login on this host")
        }
        return 0
    }

    /// One quiet sync of `books` (as `reset` does before it deletes them); whether the
    /// authenticator took it.
    static func upload(_ books: [OfflineBook], options: Options) -> Bool {
        guard let login = options.url?.text, let url = OfflineSync.url(forLogin: login),
            let body = OfflineSync.body(books),
            case let .success(response) = Authenticator(options: options).send("POST", url, body: body),
            response.status == 200, let json = try? JSONParser(maxBytes: 64 * 1024, maxDepth: 8).parse(response.body)
        else { return false }
        OfflineSync.apply(json, books: books, pins: GrantPins(stateDirectory: options.stateDirectory))
        return books.allSatisfy { $0.unsent().isEmpty }
    }

    /// `live until …` for a kept grant (not judged: that is the login's job), nil for none.
    private static func grantState(_ book: OfflineBook) -> String? {
        guard case let .success(receipt?) = book.receipt(), let grant = receipt.unverifiedGrant else { return nil }
        return "kept, not after \(UTCTime.minutes(grant.notAfter))"
    }
}
