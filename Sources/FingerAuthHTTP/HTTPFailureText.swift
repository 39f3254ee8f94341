import FingerAuthLoginDomain

/// Why no answer came (`AuthenticatorFailure`: what failed and the sentence); the client
/// files each failure under the kind that says what failed.
package typealias HTTPFailure = AuthenticatorFailure

/// The client's failures in the project's own words, one constructor per situation, so that
/// every sentence is made (and tested) in one place; the facts come from the caller (host,
/// port, the system's text for an errno).
extension AuthenticatorFailure {
    /// What a failed name lookup came to (`fa_resolve`, then `fa_probe_dns`).
    package enum Lookup: Equatable, Sendable {
        /// getaddrinfo failed in a way of its own (`text`: its message).
        case failedHere(String)
        /// The name server gave addresses; the lookup here failed anyway.
        case addressesElsewhere
        /// The name server answered: no such name, or no address for it.
        case noSuchName
        /// The name server answered with a failure (its response code).
        case nameServerFailed(code: Int)
        /// No name server could be reached (`text`: the errno's).
        case noRoute(String)
        /// No name server answered in time.
        case silent
        /// The query could not leave this host (`text`: why).
        case notSent(String)
    }

    /// The TCP connection to `host`:`port` failed: the far end refused, no route, or an
    /// error of this host's own (`errorText`: the errno's).
    package static func connectFailed(kind: Kind, host: String, port: Int, errorText: String) -> HTTPFailure {
        let place = "\(host) port \(port)"
        switch kind {
        case .refused:
            return HTTPFailure(
                kind: kind, message: "cannot connect to the authenticator: " + place + " refused the connection")
        case .noRoute:
            return HTTPFailure(
                kind: kind,
                message: "cannot connect to the authenticator: no route to " + place + " (" + errorText + ")")
        default:
            return HTTPFailure(
                kind: .local,
                message: "cannot connect to the authenticator: " + place + " not tried: " + errorText
                    + " (an error of this host)")
        }
    }

    /// The name lookup of `host` failed.
    package static func lookupFailed(host: String, _ lookup: Lookup) -> HTTPFailure {
        let prefix = "cannot connect to the authenticator: no address for " + host
        switch lookup {
        case let .failedHere(text):
            return HTTPFailure(kind: .local, message: prefix + " (" + text + ", an error of this host)")
        case .addressesElsewhere:
            return HTTPFailure(
                kind: .local,
                message: prefix + " (the name server gave addresses, the lookup here failed: an error of this host)")
        case .noSuchName:
            return HTTPFailure(kind: .noSuchName, message: prefix + " (the name server answered: no such name)")
        case let .nameServerFailed(code):
            return HTTPFailure(
                kind: .nameServerFailed, message: prefix + " (the name server answered: failure, code \(code))")
        case let .noRoute(text):
            return HTTPFailure(kind: .noRoute, message: prefix + " (no name server reachable: " + text + ")")
        case .silent:
            return HTTPFailure(kind: .timeout, message: prefix + " (no name server answered in time)")
        case let .notSent(why):
            return HTTPFailure(
                kind: .local,
                message: prefix + " (the query could not leave this host: " + why + ", an error of this host)")
        }
    }

    /// The name lookup of `host` outlasted its bound.
    package static func lookupTimedOut(host: String, milliseconds: Int64) -> HTTPFailure {
        HTTPFailure(
            kind: .timeout,
            message: "authenticator timed out: the name \(host) was not resolved within \(milliseconds) ms")
    }

    /// `host`:`port` did not accept the connection within its bound.
    package static func connectTimedOut(host: String, port: Int, milliseconds: Int64) -> HTTPFailure {
        HTTPFailure(
            kind: .timeout,
            message:
                "authenticator timed out: \(host) port \(port) did not accept the connection within \(milliseconds) ms")
    }

    /// The request's bound passed before the whole answer came.
    package static func answerTimedOut(milliseconds: Int, received: Int) -> HTTPFailure {
        HTTPFailure(
            kind: .timeout,
            message: "authenticator timed out: no whole answer within \(milliseconds) ms (\(received) bytes received)")
    }

    /// `failure`, a timeout, while this process was kept from running for `stalledMilliseconds` of it.
    package static func stalled(_ failure: HTTPFailure, stalledMilliseconds: Int64) -> HTTPFailure {
        HTTPFailure(
            kind: .stalled,
            message: failure.message
                + "; this process was kept from running for \(stalledMilliseconds) ms of it (frozen, stopped or starved): no evidence the authenticator is unreachable"
        )
    }

    /// A TLS failure: `why` in the project's words.
    package static func tls(_ why: String) -> HTTPFailure {
        HTTPFailure(kind: .tls, message: "TLS failure with the authenticator: " + why)
    }

    /// The server's certificate did not verify (OpenSSL's `X509_V_ERR_*` code).
    package static func certificate(code: Int) -> HTTPFailure {
        tls("the certificate did not verify: " + certificateProblem(code: code))
    }

    /// The server's public key is not one `pinned_pubkey` names.
    package static var pinMismatch: HTTPFailure {
        tls("the server's public key is not the pinned one (pinned_pubkey)")
    }

    /// What an `X509_V_ERR_*` code means, in the project's words; an unlisted one by number.
    package static func certificateProblem(code: Int) -> String {
        switch code {
        case 2, 20: return "its issuer is not a CA this host trusts (cafile)"
        case 7: return "its signature is wrong"
        case 9: return "the certificate is not yet valid"
        case 10: return "the certificate has expired"
        case 18: return "it is self-signed and not trusted here"
        case 19: return "its chain ends in a self-signed CA not trusted here"
        case 21: return "it is the only certificate and its issuer is unknown"
        case 23: return "it was revoked"
        case 24: return "a certificate of its chain is not a CA"
        case 62: return "it is not for this host name"
        case 64: return "it is not for this IP address"
        default: return "verification error \(code)"
        }
    }

    /// The answer's body was larger than `limit`.
    package static func tooLarge(limit: Int) -> HTTPFailure {
        HTTPFailure(
            kind: .tooLarge,
            message: "request to the authenticator failed: answer larger than \(limit) bytes (too large)")
    }

    /// The far end answered wrongly, or the exchange broke (`why`).
    package static func badAnswer(_ why: String) -> HTTPFailure {
        HTTPFailure(kind: .badAnswer, message: "request to the authenticator failed: " + why)
    }

    /// `url` does not parse (`why`): nothing was sent.
    package static func badURL(_ why: String) -> HTTPFailure {
        HTTPFailure(kind: .badURL, message: "request not sent: bad URL: " + why)
    }

    /// An `http://` URL without `allow_http`: nothing was sent.
    package static var plainHTTP: HTTPFailure {
        HTTPFailure(kind: .plainHTTP, message: "request not sent: an http:// URL needs allow_http")
    }

    /// A request header holds a line break: nothing was sent.
    package static var badHeader: HTTPFailure {
        HTTPFailure(kind: .badHeader, message: "request not sent: a request header holds a line break")
    }
}
