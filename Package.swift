// swift-tools-version:6.0
// FingerAuth: a PAM module, its fingerprint helper, its command line and its reference
// authenticator. C libraries come from Debian through system library targets; nothing
// is fetched from outside the toolchain.
import PackageDescription

let root = Context.packageDirectory

/// Executables carry the Swift runtime so that they run where no toolchain is installed.
let staticRuntime: [LinkerSetting] = [.unsafeFlags(["-static-stdlib"])]

/// Swift 6 language mode (strict concurrency checking) for every target. Each remaining
/// `@unchecked Sendable` carries a `Sendable:` comment saying why it is safe
/// (`scripts/lint-sendable.sh` checks that).
let v6: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "FingerAuth",
    products: [
        .executable(name: "fingerauth-login", targets: ["FingerAuthLogin"]),
        .executable(name: "fingerauth", targets: ["FingerAuthCLI"]),
        .executable(name: "fingerauthd", targets: ["FingerAuthDaemon"]),
        .executable(name: "fingerauth-agent", targets: ["FingerAuthAgent"]),
        .executable(name: "fingerauth-watcher", targets: ["FingerAuthWatcher"]),
    ],
    targets: [
        // C bridges, one per library; variadic functions get typed shims.
        .systemLibrary(name: "CSystem", path: "Sources/CSystem"),
        .systemLibrary(name: "CPAM", path: "Sources/CPAM"),
        .systemLibrary(name: "CLibSSL", path: "Sources/CLibSSL", pkgConfig: "libssl"),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcrypto"),
        .systemLibrary(name: "CFPrint", path: "Sources/CFPrint", pkgConfig: "libfprint-2"),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd"),
        .systemLibrary(name: "CGnuTLS", path: "Sources/CGnuTLS", pkgConfig: "gnutls"),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3"),
        .systemLibrary(name: "CPostgres", path: "Sources/CPostgres", pkgConfig: "libpq"),
        .systemLibrary(name: "CTSS2", path: "Sources/CTSS2", pkgConfig: "tss2-esys"),
        // fork + execveat of the login helper: the child runs async-signal-safe C only; and the
        // remote approval helper's SIGTERM flag (a signal handler is C's).
        .target(name: "CSpawn"),

        // The shared kernel, plain Swift with no C and no Foundation, for both sides: JSON,
        // JWT, Base64URL, names (`UserName`, `ServiceName`), the offline grant's and record's
        // wire forms, the ports every side implements (clock, random, signer).
        .target(name: "FingerAuthCore", swiftSettings: v6),
        // Device keys and their attestations as bytes: TPM structures, the key file, DER, and
        // the verification ports the authenticator's cryptography implements.
        .target(name: "FingerAuthKeyFormats", dependencies: ["FingerAuthCore"], swiftSettings: v6),
        // Every login decision, in plain Swift over ports: the options (pam.d and
        // fingerauth.conf), the process protocols that carry them (the helper's job and lines,
        // the agent's), the module's, the agent's and the parallel flows, attempts, the offline
        // judgement, the texts. The module compiles it in Embedded mode too (mk/module.mk).
        .target(name: "FingerAuthLoginDomain", dependencies: ["FingerAuthCore"], swiftSettings: v6),
        // Thin adapters over libc for every side: safe files, the config file, clocks, child
        // processes, the user database, logind's and the kernel's facts.
        .target(name: "FingerAuthSystem", dependencies: ["FingerAuthCore", "CSystem", "CSpawn"], swiftSettings: v6),
        // The login domain's ports over the system: the helper's spawn, the local seat, the
        // attempts ledger, the enrollment's presence, the agent's socket. With FingerAuthSystem,
        // what the module compiles of the system (in Embedded mode too).
        .target(
            name: "FingerAuthLoginSystem",
            dependencies: ["FingerAuthCore", "FingerAuthLoginDomain", "FingerAuthSystem", "CSystem"],
            swiftSettings: v6),
        // Threads of their own (pthread_create) for fingerauthd's writer, pruner and watchdogs:
        // apart from FingerAuthSystem, so that the module, which links System, cannot reach it.
        .target(name: "FingerAuthThreads", dependencies: ["FingerAuthCore", "FingerAuthSystem"], swiftSettings: v6),
        .target(
            name: "FingerAuthCrypto",
            dependencies: ["FingerAuthCore", "FingerAuthKeyFormats", "FingerAuthSystem", "COpenSSL"],
            swiftSettings: v6),
        .target(
            name: "FingerAuthHTTP",
            dependencies: ["FingerAuthCore", "FingerAuthLoginDomain", "FingerAuthSystem", "CLibSSL", "CSystem"],
            swiftSettings: v6),
        // TPM-resident device keys and the host's half of key attestation (ESAPI). Linked by
        // the login helper and the command line only, never by the module or the server.
        .target(
            name: "FingerAuthTPM",
            dependencies: [
                "FingerAuthCore", "FingerAuthKeyFormats", "FingerAuthLoginDomain", "FingerAuthSystem",
                "FingerAuthCrypto", "CTSS2",
            ],
            swiftSettings: v6),
        .target(
            name: "FingerAuthReader",
            dependencies: ["FingerAuthCore", "FingerAuthLoginDomain", "FingerAuthSystem", "CFPrint"], swiftSettings: v6
        ),
        // The host's offline grants: the grant kept per user, the pinned grant keys, the signed
        // log of offline logins and its upload. Linked by the login helper and the command line.
        .target(
            name: "FingerAuthOffline",
            dependencies: ["FingerAuthCore", "FingerAuthLoginDomain", "FingerAuthSystem", "FingerAuthCrypto"],
            swiftSettings: v6),
        // The workstation's half of remote approval, shared by `fingerauth approve` and the
        // watcher: the configured HTTP transport, the finger scan through the login helper,
        // and the watcher's decisions (who is watched, one approval's round) as plain values.
        .target(
            name: "FingerAuthApproval",
            dependencies: [
                "FingerAuthCore", "FingerAuthLoginDomain", "FingerAuthLoginSystem", "FingerAuthSystem",
                "FingerAuthHTTP",
            ],
            swiftSettings: v6),
        // fingerauthd, in layers. The domain: the registry's types, the storage ports, the
        // service and its steps, the token verifier, the limits, the policy — plain Swift over
        // FingerAuthCore, no C bridge; cryptography reaches it through Core's protocols.
        .target(name: "FingerAuthDomain", dependencies: ["FingerAuthCore", "FingerAuthKeyFormats"], swiftSettings: v6),
        // The storage ports over SQLite and PostgreSQL: schema and migrations, pruning, and the
        // group commit that the request path writes through.
        .target(
            name: "FingerAuthStore",
            dependencies: [
                "FingerAuthCore", "FingerAuthDomain", "FingerAuthSystem", "FingerAuthThreads", "FingerAuthCrypto",
                "CSQLite", "CPostgres",
            ],
            swiftSettings: v6),
        // HTTP's request and answer as plain values, and the console's port: what the transport
        // and the console share, so that the domain needs neither.
        .target(name: "FingerAuthWeb", dependencies: ["FingerAuthCore"], swiftSettings: v6),
        // The HTTP transport (libmicrohttpd, GnuTLS): routing, the service's outcomes as
        // statuses and bodies, steps, connection limits and TLS; it knows the service and
        // nothing of the stores.
        .target(
            name: "FingerAuthTransport",
            dependencies: [
                "FingerAuthCore", "FingerAuthDomain", "FingerAuthWeb", "FingerAuthSystem", "FingerAuthThreads",
                "FingerAuthCrypto", "CMicroHTTPD", "CGnuTLS",
            ],
            swiftSettings: v6),
        // The admin console: pages, sessions, forms, sign-in.
        .target(
            name: "FingerAuthConsole",
            dependencies: ["FingerAuthCore", "FingerAuthDomain", "FingerAuthWeb", "FingerAuthCrypto"],
            swiftSettings: v6),

        // Products. The module reaches libpam and libc only: everything that reads the
        // environment, the network, the reader or the key runs in the login helper.
        // pam_fingerauth.so itself is built in Embedded Swift by scripts/build-module.sh (no
        // Swift runtime, NEEDED libpam and libc); SwiftPM compiles the same files in the
        // normal mode for PAMFingerAuthTests.
        .target(
            name: "PAMFingerAuth",
            dependencies: [
                "FingerAuthCore", "FingerAuthLoginDomain", "FingerAuthSystem", "CPAM", "CSystem",
            ],
            exclude: ["exports.map", "embedded-support.c"],
            swiftSettings: v6),
        // fingerauth-pam: the module's decisions, outside the PAM host (it starts this). Shipped
        // in Embedded Swift like the module (scripts/build-module.sh); SwiftPM compiles the
        // same files in the normal mode, which keeps them checked with the rest.
        .executableTarget(
            name: "FingerAuthPAM",
            dependencies: [
                "FingerAuthCore", "FingerAuthLoginDomain", "FingerAuthSystem", "FingerAuthLoginSystem", "CSystem",
            ],
            swiftSettings: v6, linkerSettings: staticRuntime),
        .executableTarget(
            name: "FingerAuthLogin",
            dependencies: [
                "FingerAuthCore", "FingerAuthLoginDomain", "FingerAuthSystem", "FingerAuthReader", "FingerAuthCrypto",
                "FingerAuthHTTP", "FingerAuthTPM", "FingerAuthOffline", "CSystem", "CSpawn",
            ],
            swiftSettings: v6, linkerSettings: staticRuntime),
        // The root service for PAM hosts that run as the user (screen lockers): the same
        // login decision and helper as the module, for the caller's own user only.
        .executableTarget(
            name: "FingerAuthAgent",
            dependencies: [
                "FingerAuthCore", "FingerAuthLoginDomain", "FingerAuthSystem", "FingerAuthLoginSystem", "CSystem",
            ],
            swiftSettings: v6, linkerSettings: staticRuntime),
        // The workstation's approval watcher, a root service of its own (ARCHITECTURE: threads,
        // one per watched user, and the users' session buses, which the agent cannot have).
        .executableTarget(
            name: "FingerAuthWatcher",
            dependencies: [
                "FingerAuthApproval", "FingerAuthCore", "FingerAuthLoginDomain", "FingerAuthSystem",
                "FingerAuthReader", "FingerAuthCrypto", "FingerAuthTPM", "FingerAuthThreads", "CSystem",
            ],
            swiftSettings: v6, linkerSettings: staticRuntime),
        .executableTarget(
            name: "FingerAuthCLI",
            dependencies: [
                "FingerAuthApproval", "FingerAuthCore", "FingerAuthKeyFormats", "FingerAuthLoginDomain",
                "FingerAuthSystem",
                "FingerAuthLoginSystem", "FingerAuthCrypto", "FingerAuthHTTP", "FingerAuthReader", "FingerAuthTPM",
                "FingerAuthOffline",
            ],
            swiftSettings: v6, linkerSettings: staticRuntime),
        .executableTarget(
            name: "FingerAuthDaemon",
            dependencies: [
                "FingerAuthCore", "FingerAuthSystem", "FingerAuthCrypto", "FingerAuthDomain",
                "FingerAuthStore", "FingerAuthTransport", "FingerAuthConsole", "FingerAuthThreads",
            ],
            swiftSettings: v6, linkerSettings: staticRuntime),

        .testTarget(
            name: "PAMFingerAuthTests",
            dependencies: ["PAMFingerAuth", "FingerAuthLoginDomain", "FingerAuthCore", "CPAM"],
            swiftSettings: v6),
        // Helpers the XCTest targets share (a temporary folder of stand-in system files).
        .target(name: "FingerAuthTestSupport", path: "Tests/FingerAuthTestSupport", swiftSettings: v6),
        .testTarget(
            name: "FingerAuthApprovalTests", dependencies: ["FingerAuthApproval", "FingerAuthCore"], swiftSettings: v6),
        .testTarget(
            name: "FingerAuthCoreTests", dependencies: ["FingerAuthCore", "FingerAuthLoginDomain"], swiftSettings: v6),
        .testTarget(
            name: "FingerAuthKeyFormatsTests", dependencies: ["FingerAuthKeyFormats", "FingerAuthCore"],
            swiftSettings: v6),
        .testTarget(
            name: "FingerAuthLoginDomainTests", dependencies: ["FingerAuthLoginDomain", "FingerAuthCore"],
            swiftSettings: v6),
        .testTarget(
            name: "FingerAuthLoginSystemTests",
            dependencies: [
                "FingerAuthLoginSystem", "FingerAuthLoginDomain", "FingerAuthSystem", "FingerAuthCore",
                "FingerAuthTestSupport",
            ],
            swiftSettings: v6),
        .testTarget(
            name: "FingerAuthSystemTests",
            dependencies: ["FingerAuthSystem", "FingerAuthCore", "CSystem", "FingerAuthTestSupport"], swiftSettings: v6),
        .testTarget(name: "FingerAuthThreadsTests", dependencies: ["FingerAuthThreads"], swiftSettings: v6),
        .testTarget(
            name: "FingerAuthTPMTests",
            dependencies: [
                "FingerAuthTPM", "FingerAuthKeyFormats", "FingerAuthCrypto", "FingerAuthCore", "CTSS2",
                "FingerAuthTestSupport",
            ],
            swiftSettings: v6),
        .testTarget(
            name: "FingerAuthReaderTests",
            dependencies: [
                "FingerAuthReader", "FingerAuthLoginDomain", "FingerAuthSystem", "CFPrint", "FingerAuthTestSupport",
            ],
            swiftSettings: v6),
        .testTarget(
            name: "FingerAuthOfflineTests",
            dependencies: [
                "FingerAuthOffline", "FingerAuthCrypto", "FingerAuthLoginDomain", "FingerAuthCore",
                "FingerAuthTestSupport",
            ],
            swiftSettings: v6),
        .testTarget(
            name: "FingerAuthStoreTests", dependencies: ["FingerAuthStore", "FingerAuthDomain"], swiftSettings: v6),
        .testTarget(
            name: "FingerAuthConsoleTests", dependencies: ["FingerAuthConsole", "FingerAuthDomain"], swiftSettings: v6),
        // One test target per library where its tests need nothing else; FingerAuthServerTests
        // drives the service over the real stores: the registry's tests run one body on SQLite
        // and on PostgreSQL (libpq only makes and drops each test's database), the group
        // commit and the endpoints run over SQLite.
        .testTarget(
            name: "FingerAuthCryptoTests",
            dependencies: [
                "FingerAuthCrypto", "FingerAuthKeyFormats", "FingerAuthDomain", "FingerAuthCore", "FingerAuthSystem",
                "FingerAuthThreads",
            ],
            swiftSettings: v6),
        .testTarget(
            name: "FingerAuthHTTPTests", dependencies: ["FingerAuthHTTP", "FingerAuthLoginDomain", "FingerAuthCore"],
            swiftSettings: v6),
        .testTarget(
            name: "FingerAuthDomainTests",
            dependencies: ["FingerAuthDomain", "FingerAuthKeyFormats", "FingerAuthCore"], swiftSettings: v6),
        .testTarget(name: "FingerAuthWebTests", dependencies: ["FingerAuthWeb"], swiftSettings: v6),
        .testTarget(
            name: "FingerAuthTransportTests",
            dependencies: [
                "FingerAuthTransport", "FingerAuthDomain", "FingerAuthWeb", "FingerAuthSystem", "FingerAuthThreads",
            ],
            swiftSettings: v6),
        .testTarget(
            name: "FingerAuthServerTests",
            dependencies: [
                "FingerAuthDomain", "FingerAuthStore", "FingerAuthTransport", "FingerAuthConsole", "FingerAuthWeb",
                "FingerAuthCrypto", "FingerAuthSystem", "FingerAuthThreads", "FingerAuthCore", "CPostgres",
            ],
            swiftSettings: v6),
    ]
)
