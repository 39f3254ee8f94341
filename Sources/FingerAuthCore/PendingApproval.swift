/// One pending remote approval as fingerauthd's watch delivers it to a workstation
/// (`GET /v1/approvals/watch`): who asks, where, for what, from where, and the code the
/// person also sees on the asking host. Every field is checked on the way in: it is shown
/// on a terminal (or a notification) and signed back into the decision exactly as read.
package struct PendingApproval: Equatable, Sendable {
    package var id: String
    package var code: String
    package var user: String
    package var host: String
    package var service: String
    package var rhost: String
    package var tty: String
    package var nonce: String
    /// Who asks for the user's login when that is another user (`su` from alice's session
    /// asking for bob's); empty when it is the user themself.
    package var caller: String
    /// Epoch seconds, by the authenticator's clock.
    package var expires: Int64

    package init(
        id: String, code: String, user: String, host: String, service: String, rhost: String, tty: String,
        nonce: String, caller: String = "", expires: Int64
    ) {
        self.id = id
        self.code = code
        self.user = user
        self.host = host
        self.service = service
        self.rhost = rhost
        self.tty = tty
        self.nonce = nonce
        self.caller = caller
        self.expires = expires
    }

    /// An element of the watch answer's `approvals`; nil when a member is missing or out of
    /// its shape (then nothing of it is shown or signed).
    package init?(_ json: JSONValue) {
        guard let id = json["id"]?.stringValue, Self.isToken(id, 16...64),
            let code = json["code"]?.stringValue, !code.isEmpty, code.count <= 8,
            code.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let user = json["user"]?.stringValue, UserName.isValid(user),
            let host = json["host"]?.stringValue, Self.isText(host, 1...255),
            let service = json["service"]?.stringValue, PortableWord.isValid(service, maxLength: 64),
            let rhost = json["rhost"]?.stringValue, Self.isText(rhost, 0...255),
            let tty = json["tty"]?.stringValue, Self.isText(tty, 0...64),
            let nonce = json["nonce"]?.stringValue, Self.isToken(nonce, 22...128),
            let caller = json["caller"].map({ $0.stringValue }) ?? "", Self.isText(caller, 0...64),
            !caller.utf8.contains(0x20),
            let expires = json["expires"]?.int64Value
        else { return nil }
        self.init(
            id: id, code: code, user: user, host: host, service: service, rhost: rhost, tty: tty, nonce: nonce,
            caller: caller, expires: expires)
    }

    /// What the person must see before deciding, in one line:
    /// `alice → sudo on web01, from 10.0.0.5 (ssh), code 47`; with no client address
    /// `… from web01 itself (pts/3) …`; asked by another user,
    /// `mallory asks to become alice via su on web01, …`.
    package var sentence: String {
        let terminal = tty.isEmpty ? "" : " (\(Self.shortTTY(tty)))"
        let origin = rhost.isEmpty ? "from \(host) itself\(terminal)" : "from \(rhost)\(terminal)"
        let who = caller.isEmpty ? "\(user) → \(service)" : "\(caller) asks to become \(user) via \(service)"
        return TerminalText.escaped("\(who) on \(host), \(origin), code \(code)")
    }

    /// `/dev/pts/3` shown as `pts/3`.
    static func shortTTY(_ tty: String) -> String {
        tty.hasPrefix("/dev/") ? String(tty.dropFirst(5)) : tty
    }

    /// Printable ASCII (no controls, no DEL), of a length in `lengths`.
    static func isText(_ text: String, _ lengths: ClosedRange<Int>) -> Bool {
        let bytes = Array(text.utf8)
        return lengths.contains(bytes.count) && bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7f }
    }

    /// Base64url characters only, of a length in `lengths`.
    static func isToken(_ text: String, _ lengths: ClosedRange<Int>) -> Bool {
        let bytes = Array(text.utf8)
        return lengths.contains(bytes.count) && bytes.allSatisfy(Base64URL.isAlphabet)
    }
}

/// A watch's answer: `{"approvals":[…],"server_time":…}`.
package struct WatchAnswer: Equatable, Sendable {
    package var approvals: [PendingApproval]
    package var serverTime: Int64?

    /// Nil when the body is not that shape; an approval that does not parse is dropped
    /// (never shown, never signed).
    package init?(body: [UInt8]) {
        guard let json = try? JSONParser().parse(body), let list = json["approvals"]?.arrayValue else { return nil }
        approvals = list.compactMap(PendingApproval.init)
        serverTime = json["server_time"]?.int64Value
    }
}

/// What a person decides on an approval, as a decision token's `decision` claim says it:
/// the workstation signs it, fingerauthd reads it.
package enum ApprovalVerdict: String, Sendable {
    /// A finger matched on the workstation.
    case approve
    /// "Not me".
    case deny
}
