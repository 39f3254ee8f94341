// libFuzzer entry point for FingerAuthCore's parsers of outside input. One binary, the
// target chosen by FINGERAUTH_FUZZ_TARGET: config, pam-args, scan-message, login-request,
// authenticator-response, http-answer, jwt, agent-message, tpm-structures, command-line, offline,
// module-protocol. Built by
// `make fuzz` with swiftc -sanitize=fuzzer,address together with Sources/FingerAuthCore and the
// HTTP client's framing (HTTPWire.swift, HTTPAnswerReader.swift; see mk/fuzz.mk). A trap here is a finding.

#if canImport(Glibc)
import Glibc
#endif

let target: String = {
    guard let value = getenv("FINGERAUTH_FUZZ_TARGET") else { return "config" }
    return String(cString: value)
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let text = String(decoding: bytes, as: UTF8.self)
    switch target {
    case "config":
        if let entries = try? ConfigLines.parse(text, name: "fuzz.conf") {
            var options = Options()
            for entry in entries { try? options.set(entry.key, entry.value, source: entry.source) }
            _ = try? options.validated(source: "fuzz")
        }
    case "pam-args":
        let arguments = text.split(separator: " ").map(String.init)
        _ = try? OptionsLoader.load(arguments: arguments) { _ in "url = https://auth.example/v1/login\n" }
    case "scan-message":
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if let message = HelperMessage(line: String(line)) {
                // What the helper prints must read back as the same message.
                guard HelperMessage(line: message.line) == message else { abort() }
            }
        }
    case "command-line":
        // The arguments every program parses (one word a line): what parses holds only
        // the options it may, each once; a refusal's message is printable and short.
        let words = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        do {
            let given = try CommandArguments(
                words, valued: ["user", "state-dir", "config"], switches: ["json", "all"],
                maxPositional: 1)
            guard Set(given.values.keys).isSubset(of: ["user", "state-dir", "config"]),
                given.switches.isSubset(of: ["json", "all"]), given.positional.count <= 1,
                !given.values.values.contains("")
            else { abort() }
        } catch {
            guard error.message.utf8.count <= 128, error.message.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
                abort()
            }
        }
    case "login-request":
        // The helper's request from the module: what parses must render and parse back the same.
        if let job = try? LoginJob.parse(text) {
            guard (try? LoginJob.parse(job.text)) == job else { abort() }
        }
    case "authenticator-response":
        let status = bytes.first.map { 100 + Int($0) * 2 } ?? 200
        _ = AuthenticatorVerdict.interpret(
            status: status, body: Array(bytes.dropFirst()), user: "alice", jti: "abc", kid: "k1")
        _ = AuthenticatorVerdict.interpret(status: 200, body: bytes, user: "alice", jti: "abc", kid: "k1")
    case "http-answer":
        // What the authenticator (or anything on its port) sends the helper: every input is
        // taken without trapping, whole or cut anywhere, and a complete answer's body is
        // within the limit, its status a final one.
        let limit = 512
        let method = bytes.first.map { $0 & 1 == 0 ? "POST" : "HEAD" } ?? "POST"
        let data = Array(bytes.dropFirst())
        for cut in [data.count, data.count / 2, data.count / 3] {
            for ended in [false, true] {
                if case let .complete(status, body, _, _) = HTTPWire.parse(
                    Array(data.prefix(cut)), ended: ended, method: method, limit: limit)
                {
                    guard body.count <= limit, (200...599).contains(status) else { abort() }
                }
            }
        }
        // Read as it arrives, in pieces of a size the input picks, the answer is the same as
        // read whole: the reader resumes where it stopped and never loses or repeats a byte.
        let piece = max(1, Int(bytes.first ?? 1) % 7)
        var reader = HTTPAnswerReader(method: method, limit: limit)
        var stepwise = HTTPWire.Parse.incomplete
        var start = 0
        while start < data.count, stepwise == .incomplete {
            let end = min(data.count, start + piece)
            reader.append(data[start..<end])
            stepwise = reader.result(ended: false)
            start = end
        }
        if stepwise == .incomplete { stepwise = reader.result(ended: true) }
        let whole = HTTPWire.parse(data, ended: start >= data.count, method: method, limit: limit)
        if case .complete = stepwise, stepwise != whole, start >= data.count { abort() }
    case "jwt":
        if let jwt = try? CompactJWT(parsing: text) {
            _ = JSONEncoding.encode(jwt.claims)
            _ = JWK(json: jwt.header)
        }
        if let value = try? JSONParser().parse(bytes) {
            guard (try? JSONParser().parse(JSONEncoding.encode(value))) == value else { abort() }
        }
    case "tpm-structures":
        // What a host sends with a TPM key's registration: each parser takes every input
        // without trapping, and what parses as a key has a modulus of its size.
        if let key = try? TPMPublicKey(tpm2b: bytes) {
            guard key.modulus.count * 8 == Int(key.keyBits), !key.exponentBytes.isEmpty else { abort() }
        }
        _ = try? TPMPublicKey(tpmt: bytes)
        if let info = try? TPMCertifyInfo(bytes) {
            guard info.name.count <= 66, info.extraData.count <= 64 else { abort() }
        }
        _ = try? TPMSignature(bytes)
        // A `TSS2 PRIVATE KEY` body (read by the helper and the command line from the key file).
        if let file = try? TPMKeyFile(der: bytes) {
            guard (try? TPMKeyFile(der: file.der)) == file else { abort() }
        }
    case "agent-message":
        // Both directions of the agent's protocol: what parses must render and parse back the same.
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if let request = AgentRequest(line: String(line)) {
                guard AgentRequest(line: request.line) == request else { abort() }
            }
            if let reply = AgentReply(line: String(line)) {
                guard AgentReply(line: reply.line) == reply else { abort() }
            }
        }
    case "offline":
        // What a host keeps and reads back of offline grants (the grant, its receipt, the
        // offline log's records) and what judges them: no input traps, and a grant that
        // verifies judges to an end within its own bounds.
        struct Accepting: GrantSignatureCheck {
            func verifyES256(key: GrantKeyJWK, signature: [UInt8], data: [UInt8]) -> Bool { true }
        }
        var numbers: [Int64] = []
        var index = 0
        while index + 8 <= min(bytes.count, 48) {
            numbers.append(bytes[index..<(index + 8)].reduce(Int64(0)) { $0 << 8 | Int64($1) })
            index += 8
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if let record = OfflineRecord(line: line) {
                guard OfflineRecord(claims: record.claims) == record else { abort() }
            }
            if let json = try? JSONParser().parse(Array(line.utf8)), let receipt = GrantReceipt(json: json) {
                guard GrantReceipt(json: receipt.json) == receipt else { abort() }
            }
            guard let key = GrantKeyJWK(x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32)),
                case let .success(grant) = OfflineGrant.verified(
                    line, keys: ["k": key], check: Accepting(), user: "alice", host: "h", kid: "d")
            else { continue }
            guard numbers.count == 6 else { continue }
            let arrival = GrantClockReading(wall: numbers[0], bootID: "b", bootMilliseconds: numbers[1])
            let now = GrantClockReading(
                wall: numbers[2], bootID: numbers[5] & 1 == 0 ? "b" : "c", bootMilliseconds: numbers[3])
            if case let .success(end) = OfflineJudgement.judge(
                grant, receipt: arrival, now: now, latestSeen: numbers[4], usesSoFar: 0, service: "sudo")
            {
                guard end <= grant.notAfter else { abort() }
            }
        }
    case "module-protocol":
        fuzzModuleProtocol(text)
    default:
        abort()
    }
    return 0
}

/// The lines between pam_fingerauth.so and fingerauth-pam: the module's request (read by
/// fingerauth-pam), the calls (read by the module, inside the PAM host) and the answers.
/// What parses renders as one line each and parses back the same; a known answer is only
/// ever a question's.
func fuzzModuleProtocol(_ text: String) {
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)[...]
    if let request = ModuleRequest.read(maxArguments: 64, { lines.popFirst() }) {
        var again = request.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)[...]
        guard ModuleRequest.read(maxArguments: 64, { again.popFirst() }) == request,
            request.known.count <= ModuleProtocol.maxKnownAnswers,
            request.known.allSatisfy({ ModuleKnownAnswer($0.call, $0.answer) != nil })
        else { abort() }
    }
    for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
        if let call = ModuleCall(line: line) {
            guard !call.line.utf8.contains(0x0A), ModuleCall(line: call.line) == call else { abort() }
        }
        if let answer = ModuleAnswer(line: line) {
            guard !answer.line.utf8.contains(0x0A), ModuleAnswer(line: answer.line) == answer else { abort() }
        }
    }
}
