/// The way to the authenticator, as the login helper's flow uses it: one warm-up request
/// that opens the connection while the finger is awaited, then the token's POST over it.
/// `FingerAuthHTTP`'s `HTTPConnection` implements it; tests use a scripted fake.
package protocol AuthenticatorChannel: SendableMetatype {
    /// The warm-up: `GET url` (`body` nil) or the offline sync's `POST url`, bounded by
    /// `boundMilliseconds` instead of the channel's own bound.
    func warmUp(url: String, body: [UInt8]?, boundMilliseconds: Int) -> Result<
        AuthenticatorAnswer, AuthenticatorFailure
    >
    /// The login's `POST url` with `body` (the token and the stage times), sent at most once.
    func postToken(url: String, body: [UInt8]) -> Result<AuthenticatorAnswer, AuthenticatorFailure>
}

/// An HTTP answer, whatever its status.
package struct AuthenticatorAnswer: Equatable, Sendable {
    package var status: Int
    package var body: [UInt8]

    package init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// Why no answer came: what failed, and a sentence for logs and people, free of secrets.
package struct AuthenticatorFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// What failed. Only the network's own word — the far end refused, no route, a name
    /// server answered, a silence that outlasted a running process — is evidence that the
    /// authenticator cannot be reached (`isNetworkEvidence`); this host's own errors, a
    /// process kept from running, a request never sent and an authenticator that answered
    /// wrongly are not.
    package enum Kind: String, Sendable, CaseIterable {
        /// The far end refused the connection (ECONNREFUSED).
        case refused
        /// No route to the host or its network (ENETUNREACH, EHOSTUNREACH), or to a name server.
        case noRoute = "no-route"
        /// A name server answered: no such name (NXDOMAIN), or no address for it.
        case noSuchName = "no-such-name"
        /// A name server answered with a failure (SERVFAIL, REFUSED).
        case nameServerFailed = "name-server-failed"
        /// The time ran out while this process was running (`ProgressWatch`).
        case timeout
        /// The time ran out while this process was kept from running (frozen, stopped, starved).
        case stalled
        /// An error of this host: no local port or address (EADDRNOTAVAIL), no descriptor
        /// (EMFILE, ENFILE), no buffer or memory (ENOBUFS, ENOMEM), a lookup that never left,
        /// no TLS context.
        case local = "local-error"
        /// TLS: the certificate did not verify (chain, dates, host name, pin) or the
        /// handshake failed.
        case tls
        /// The answer's body was larger than the bound.
        case tooLarge = "too-large"
        /// The far end answered wrongly: garbled, framing over its bounds, cut off, closed
        /// without an answer, the connection broken mid-exchange.
        case badAnswer = "bad-answer"
        /// Not sent: the URL does not parse.
        case badURL = "bad-url"
        /// Not sent: an `http://` URL without `allow_http`.
        case plainHTTP = "plain-http"
        /// Not sent: a request header holds a line break (it would smuggle headers of its own).
        case badHeader = "bad-header"
    }

    package var kind: Kind
    package var message: String
    package var description: String { message }

    package init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// Whether this failure is positive evidence that the network, not this host nor the
    /// authenticator's answer, kept the answer away: only then may an offline grant be used.
    package var isNetworkEvidence: Bool {
        switch kind {
        case .refused, .noRoute, .noSuchName, .nameServerFailed, .timeout: return true
        case .stalled, .local, .tls, .tooLarge, .badAnswer, .badURL, .plainHTTP, .badHeader:
            return false
        }
    }
}
