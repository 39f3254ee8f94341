import FingerAuthServer
import FingerAuthSystem
#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd serve`: opens the registry, starts the HTTP daemon, prints the one
/// `listening on URL` line, then waits for SIGTERM or SIGINT and shuts down cleanly.
enum ServeCommand {
    static let name = "serve"

    static func run(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let options = try Options(arguments, valued: ["listen", "db", "audience", "tls-cert", "tls-key", "max-ttl", "skew"],
                                  command: name)
        let listenText = try options.required("listen", command: name)
        guard let listen = ListenAddress(listenText) else {
            throw UsageError(message: "serve: --listen takes a numeric address and port, such as 127.0.0.1:8443 or [::1]:8443")
        }
        let dbPath = try options.required("db", command: name)
        let audience = try options.required("audience", command: name)
        guard audience.utf8.count <= 256, audience.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw UsageError(message: "serve: --audience must be 1 to 256 printable characters without spaces")
        }
        let maxTTL = try options.seconds("max-ttl", default: 300, range: 1...300, command: name)
        let skew = try options.seconds("skew", default: 30, range: 0...300, command: name)
        let certPath = options.optional("tls-cert")
        let keyPath = options.optional("tls-key")
        guard (certPath == nil) == (keyPath == nil) else {
            throw UsageError(message: "serve: give both --tls-cert and --tls-key, or neither")
        }
        guard certPath != nil || listen.isLoopback else {
            throw UsageError(message: "serve: plain HTTP is only allowed on a loopback address; give --tls-cert and --tls-key, or listen on 127.0.0.1")
        }

        let log = RequestLog()
        // Signals are taken by sigwait below; block them before any thread exists so that
        // the worker threads inherit the mask.
        signal(SIGPIPE, SIG_IGN)
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
        umask(0o077)

        var tls: TLSMaterial?
        if let certPath, let keyPath {
            do {
                tls = try TLSMaterial(certificatePath: certPath, keyPath: keyPath)
            } catch {
                log.message("cannot use TLS material: \(error)")
                return 1
            }
        }
        let store: AuthStore
        do {
            store = try AuthStore(path: dbPath)
        } catch {
            log.message("\(error)")
            return 1
        }
        let policy = VerifierPolicy(audience: audience, maxTTL: maxTTL, skew: skew)
        let service = AuthenticatorService(store: store, policy: policy, log: log)
        let server: HTTPServer
        do {
            server = try HTTPServer(service: service, listen: listen, tls: tls)
        } catch {
            log.message("\(error)")
            store.close()
            return 1
        }
        tls = nil
        print("listening on \(server.scheme)://\(listen.urlHost):\(server.port)")
        fflush(stdout)
        log.message("serving on \(listen.urlHost):\(server.port) audience=\(audience) max-ttl=\(maxTTL) skew=\(skew)")

        var received: Int32 = 0
        while true {
            let rc = sigwait(&stopSignals, &received)
            if rc == 0 && (received == SIGTERM || received == SIGINT) { break }
        }
        log.message("signal \(received): stopping")
        server.stop()
        store.close()
        log.message("stopped")
        return 0
    }
}
