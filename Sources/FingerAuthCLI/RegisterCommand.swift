import FingerAuthCore
import FingerAuthCrypto
import FingerAuthHTTP
import FingerAuthSystem

/// `fingerauth register`: sends the user's public key to the authenticator with this
/// host's enrollment token, and a proof signed by the key itself.
enum RegisterCommand {
    static let usage = "usage: fingerauth register [--user U] [--config F] [--state-dir D]"

    static func run(_ words: [String]) throws -> Int32 {
        let args = try Arguments(words, options: Context.commonOptions, flags: [])
        try Context.requireRoot("register")
        let context = try Context(args, requireURL: true)
        let key = try context.loadDeviceKey()
        let status = try register(key, context: context)
        say("registered key \(key.kid) for \(context.user) at \(keysURL(context.options)): \(status)")
        return 0
    }

    /// `…/v1/keys` next to the login URL (`…/v1/login`), else at the URL's origin.
    static func keysURL(_ options: Options) -> String {
        let login = options.url?.text ?? ""
        if login.hasSuffix("/v1/login") { return String(login.dropLast("/v1/login".count)) + "/v1/keys" }
        let scheme = login.hasPrefix("https://") ? "https://" : "http://"
        let authority = login.dropFirst(scheme.count).prefix(while: { $0 != "/" && $0 != "?" })
        return scheme + authority + "/v1/keys"
    }

    /// Registers `key` and records it in the user's `registration` file; returns the status.
    static func register(_ key: DeviceKey, context: Context) throws(CommandError) -> String {
        let options = context.options
        var token: [UInt8]
        do {
            token = try SafeFile.read(options.tokenFile, rule: .secret)
        } catch {
            throw CommandError("host enrollment token: \(error) (create one on the authenticator: fingerauthd token create --host \(options.hostID ?? currentHostName()))")
        }
        defer { wipe(&token) }
        let tokenText = String(decoding: token, as: UTF8.self).filter { !$0.isWhitespace }

        let host = options.hostID ?? currentHostName()
        let now = SystemClock().now()
        guard let jti = SystemRandom().bytes(16) else { throw CommandError("no random bytes") }
        let claims: JSONValue = .object([
            ("iss", .string(host)), ("sub", .string(context.user)), ("aud", .string(options.effectiveAudience)),
            ("iat", .integer(now)), ("exp", .integer(now + 60)), ("jti", .string(Base64URL.encode(jti))),
        ])
        let input = CompactJWT.signingInput(header: LoginClaims.header(kid: key.kid), claims: claims)
        guard let signature = key.signRS256(input) else { throw CommandError("signing the proof failed") }
        let body = JSONEncoding.encodeBytes(.object([
            ("user", .string(context.user)), ("host", .string(host)), ("jwk", key.jwk.json),
            ("proof", .string(CompactJWT.serialize(signingInput: input, signature: signature))),
        ]))
        let url = keysURL(options)
        let answer = HTTPClient.send(method: "POST", url: url, body: body,
                                     headers: ["Authorization: Bearer " + tokenText],
                                     settings: HTTPSettings(options: options))
        switch answer {
        case let .failure(failure):
            throw CommandError("\(failure.message) (url \(url))")
        case let .success(response):
            let json = try? JSONParser().parse(response.body)
            switch response.status {
            case 200, 201:
                let status = json?["status"]?.stringValue ?? "active"
                let record = "kid = \(key.kid)\nauthenticator = \(url)\ntime = \(now)\nstatus = \(status)\n"
                do {
                    try SafeFile.writeAtomically(context.paths.registration, Array(record.utf8), mode: 0o600)
                } catch {
                    throw CommandError("registered, but cannot record it: \(error)")
                }
                return status
            case 401, 403:
                throw CommandError("the authenticator refused this host's enrollment token (\(options.tokenFile))")
            case 409:
                throw CommandError("the authenticator has this key registered to another user or host")
            default:
                let reason = json?["error"]?.stringValue ?? "no reason given"
                throw CommandError("the authenticator answered \(response.status): \(reason)")
            }
        }
    }
}
