import FingerAuthServer
import FingerAuthStore
import FingerAuthSystem
#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd serve`: reads flags over the configuration file, opens the registry,
/// starts the HTTP daemon, prints the one `listening on URL` line, then waits for SIGTERM
/// or SIGINT and shuts down cleanly: no new connections, requests in flight answered
/// (up to `shutdown-grace` seconds), database closed.
enum ServeCommand {
    static let name = "serve"

    static func run(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let flags = try Options(arguments, valued: ConfigFile.keys.union(["config"]), command: name)
        let options = flags.over(try ConfigFile.load(flags.optional("config"), command: name))
        let settings = try ServeSettings(options, command: name)
        let listen = settings.listen

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
        if let certPath = settings.certificate, let keyPath = settings.key {
            do {
                tls = try TLSMaterial(certificatePath: certPath, keyPath: keyPath)
            } catch {
                log.message("cannot use TLS material: \(error)")
                return 1
            }
        }
        let location = StoreLocation(settings.database)
        let store: any AuthStorage
        let durability: String
        do {
            // One connection per HTTP worker, one for the group-commit writer, one for the pruner.
            store = try location.open(connections: Int(settings.limits.threads) + 2,
                                      statementTimeout: settings.statementTimeout)
            durability = try store.durability()
        } catch {
            log.message("\(error)")
            return 1
        }
        // Token times are judged by the database's clock (PostgreSQL: one clock for the fleet).
        let clock = DatabaseClock()
        let pruner = StorePruner(store: store, interval: settings.pruneInterval, policy: settings.prunePolicy,
                                 clock: clock, log: { [log] in log.message($0) })
        pruner.measureClock()
        let service = AuthenticatorService(store: store, policy: settings.policy, settings: settings.service,
                                           clock: clock, log: log)
        service.startWriter()
        let server: HTTPServer
        do {
            server = try HTTPServer(service: service, listen: listen, tls: tls, limits: settings.limits)
        } catch {
            log.message("\(error)")
            service.stopWriter()
            store.close()
            return 1
        }
        tls = nil
        pruner.start()
        print("listening on \(server.scheme)://\(listen.urlHost):\(server.port)")
        fflush(stdout)
        log.message("serving on \(listen.urlHost):\(server.port) audience=\(settings.policy.audience) " +
                    "db=\(location.redacted) max-ttl=\(settings.policy.maxTTL) skew=\(settings.policy.skew) approval=\(settings.service.approval.rawValue)")
        log.message("commits: \(durability); one commit per batch of concurrent requests (group commit)")

        var received: Int32 = 0
        while true {
            let rc = sigwait(&stopSignals, &received)
            if rc == 0 && (received == SIGTERM || received == SIGINT) { break }
        }
        log.message("signal \(received): stopping; finishing requests in flight (up to \(Int(settings.shutdownGrace)) s)")
        let unfinished = server.stop(grace: settings.shutdownGrace)
        if unfinished > 0 { log.message("\(unfinished) requests still unfinished at the deadline were cut off") }
        pruner.stop()
        service.stopWriter()
        store.close()
        log.message("stopped")
        return 0
    }
}
