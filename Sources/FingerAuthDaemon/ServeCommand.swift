import FingerAuthConsole
import FingerAuthCore
import FingerAuthCrypto
import FingerAuthDomain
import FingerAuthStore
import FingerAuthSystem
import FingerAuthThreads
import FingerAuthTransport

#if canImport(Glibc)
import Glibc
#endif

/// `fingerauthd serve`: reads flags over the configuration file, opens the registry,
/// starts the HTTP daemon, prints the one `listening on URL` line, then waits for signals:
/// SIGHUP reloads the TLS certificate and key; SIGTERM or SIGINT shuts down cleanly: no
/// new connections, requests in flight answered (up to `shutdown-grace` seconds),
/// database closed.
enum ServeCommand {
    static let name = "serve"

    static func run(_ arguments: ArraySlice<String>) throws(UsageError) -> Int32 {
        let flags = try Options(arguments, valued: ConfigFile.keys.union(["config"]), command: name)
        let options = flags.over(try ConfigFile.load(flags.optional("config"), command: name))
        let settings = try ServeSettings(options, command: name)
        let listen = settings.listen
        if let problem = DatabaseDirectory.problem(database: settings.database, config: flags.optional("config")) {
            printError("fingerauthd: serve: \(problem)")
            return 1
        }

        let log = RequestLog()
        // Signals are taken by sigwait below; block them before any thread exists so that
        // the worker threads inherit the mask.
        signal(SIGPIPE, SIG_IGN)
        var waitedSignals = sigset_t()
        sigemptyset(&waitedSignals)
        sigaddset(&waitedSignals, SIGTERM)
        sigaddset(&waitedSignals, SIGINT)
        sigaddset(&waitedSignals, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &waitedSignals, nil)
        umask(0o077)
        checkConnectionLimits(for: settings.limits, log: log)

        var tls: TLSCredentials?
        if let certPath = settings.certificate, let keyPath = settings.key {
            do {
                tls = try loadCredentials(certificatePath: certPath, keyPath: keyPath)
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
            store = try location.open(
                connections: Int(settings.limits.threads) + 2,
                statementTimeout: settings.statementTimeout)
            durability = try store.durability()
        } catch {
            log.message("\(error)")
            return 1
        }
        // Token times are judged by the database's clock (PostgreSQL: one clock for the fleet).
        let clock = DatabaseClock()
        let pruner = StorePruner(
            store: store, interval: settings.pruneInterval, policy: settings.prunePolicy,
            clock: clock, log: { [log] in log.message($0) })
        pruner.measureClock()
        // Refusals of addresses past their limit are counted in memory and written about
        // once a second by the group commit, with the batch of the moment.
        let refusals = RefusalCounter(window: settings.service.addressLimit.window)
        let writer = GroupCommit(store: store, periodic: { refusals.drain() }, log: { [log] in log.message($0) })
        var console: AdminConsole?
        if settings.adminListen != nil {
            var consoleSettings = ConsoleSettings()
            consoleSettings.secureCookies = tls != nil
            console = AdminConsole(store: store, clock: clock, log: log, settings: consoleSettings, refusals: refusals)
        }
        let service = AuthenticatorService(
            store: store, writer: writer, crypto: OpenSSLAuthenticatorCrypto(),
            policy: settings.policy, settings: settings.service, clock: clock, log: log,
            refusals: refusals)
        service.startWriter()
        // PostgreSQL: another instance's change of an approval wakes the polls parked here.
        var listener: ApprovalListener?
        if case let .postgres(url) = location {
            let started = ApprovalListener(url: url, wakeups: service, log: { [log] in log.message($0) })
            started.start()
            listener = started
        }
        let server: HTTPServer
        do {
            server = try HTTPServer(service: service, log: log, listen: listen, tls: tls, limits: settings.limits)
        } catch {
            log.message("\(error)")
            listener?.stop()
            service.stopWriter()
            store.close()
            return 1
        }
        var consoleServer: HTTPServer?
        if let adminListen = settings.adminListen, let console {
            do {
                consoleServer = try HTTPServer(
                    service: service, log: log, listen: adminListen, tls: tls, limits: settings.limits,
                    surface: .console(console))
            } catch {
                log.message("admin console: \(error)")
                _ = server.stop()
                listener?.stop()
                service.stopWriter()
                store.close()
                return 1
            }
        }
        pruner.start()
        print("listening on \(server.scheme)://\(listen.urlHost):\(server.port)")
        if let consoleServer, let adminListen = settings.adminListen {
            print("console on \(consoleServer.scheme)://\(adminListen.urlHost):\(consoleServer.port)")
        }
        fflush(nil)
        log.message(
            "serving on \(listen.urlHost):\(server.port) audience=\(settings.policy.audience) "
                + "db=\(location.redacted) max-ttl=\(settings.policy.maxTTL) skew=\(settings.policy.skew) approval=\(settings.service.approval.rawValue)"
        )
        log.message("commits: \(durability); one commit per batch of concurrent requests (group commit)")
        if let tls { log.message("TLS certificate: \(tls.summary)") }
        tls = nil

        var received: Int32 = 0
        while true {
            let rc = sigwait(&waitedSignals, &received)
            guard rc == 0 else { continue }
            if received == SIGTERM || received == SIGINT { break }
            if received == SIGHUP {
                reloadCertificate(settings, server: server, log: log)
                if let consoleServer { reloadCertificate(settings, server: consoleServer, log: log) }
            }
        }
        log.message(
            "signal \(received): stopping; finishing requests in flight (up to \(Int(settings.shutdownGrace)) s)")
        _ = consoleServer?.stop()
        let unfinished = server.stop(grace: settings.shutdownGrace)
        if unfinished > 0 { log.message("\(unfinished) requests still unfinished at the deadline were cut off") }
        listener?.stop()
        pruner.stop()
        service.stopWriter()
        store.close()
        log.message("stopped")
        return 0
    }

    /// Reads and checks both files (`TLSMaterial`), then parses them (`TLSCredentials`);
    /// the key bytes are cleared when the material goes, on return.
    private static func loadCredentials(certificatePath: String, keyPath: String) throws -> TLSCredentials {
        let material = try TLSMaterial(certificatePath: certificatePath, keyPath: keyPath)
        return try TLSCredentials(material)
    }

    /// SIGHUP: new handshakes get the certificate and key the files hold now, when both
    /// load and belong together; otherwise the ones in use stay and the log says why.
    private static func reloadCertificate(_ settings: ServeSettings, server: HTTPServer, log: RequestLog) {
        guard let certPath = settings.certificate, let keyPath = settings.key else {
            log.message("SIGHUP: plain HTTP, no TLS certificate to reload")
            return
        }
        do {
            let credentials = try loadCredentials(certificatePath: certPath, keyPath: keyPath)
            server.replaceCertificate(with: credentials)
            log.message("reloaded TLS certificate (\(credentials.summary))")
        } catch {
            log.message("TLS certificate not reloaded, the previous one stays in use: \(error)")
        }
    }

    /// Raises the soft RLIMIT_NOFILE toward the hard limit so that `max-connections` fit
    /// beside the listening socket, the workers' event descriptors and the
    /// database connections. A limit that stays too low (a hard limit below, or a sandbox
    /// refusing setrlimit) is logged: connections past it are refused at accept. So is a
    /// global cap that four addresses at their own cap could fill.
    private static func checkConnectionLimits(for limits: ServerLimits, log: RequestLog) {
        let needed = rlim_t(limits.maxConnections) + 64 + 3 * rlim_t(limits.threads)
        var current = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &current) == 0 else { return }
        if current.rlim_cur < needed && current.rlim_max > current.rlim_cur {
            var raised = current
            raised.rlim_cur = min(current.rlim_max, needed)
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { current = raised }
        }
        if current.rlim_cur < needed {
            log.message(
                "open-file limit \(current.rlim_cur) is below the \(needed) that max-connections "
                    + "\(limits.maxConnections) needs; raise LimitNOFILE or lower max-connections")
        }
        if limits.maxConnections < 4 * limits.maxConnectionsPerAddress {
            log.message(
                "max-connections \(limits.maxConnections) is below 4 x max-connections-per-address "
                    + "\(limits.maxConnectionsPerAddress): a few client addresses can hold every connection")
        }
    }
}
