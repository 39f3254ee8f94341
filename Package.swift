// swift-tools-version:6.0
// FingerAuth: a PAM module, its fingerprint helper, its command line and its reference
// authenticator. C libraries come from Debian through system library targets; nothing
// is fetched from outside the toolchain.
import PackageDescription

let root = Context.packageDirectory

/// The module runs inside sudo/sshd: static Swift runtime, never unloaded (a runtime
/// unmapped by pam_end's dlclose crashes the host), bound now, read-only relocations, and
/// only pam_sm_* exported. lld, because gold leaves the runtime's local symbols in .dynsym.
let moduleLinkerFlags: [String] = [
    "-static-stdlib",
    "-use-ld=lld",
    "-Xlinker", "-z", "-Xlinker", "nodelete",
    "-Xlinker", "-z", "-Xlinker", "now",
    "-Xlinker", "-z", "-Xlinker", "relro",
    "-Xlinker", "--version-script=\(root)/Sources/PAMFingerAuth/exports.map",
]

/// Executables carry the Swift runtime so that they run where no toolchain is installed.
let staticRuntime: [LinkerSetting] = [.unsafeFlags(["-static-stdlib"])]

/// Swift 6 language mode (strict concurrency checking) for every target. Each remaining
/// `@unchecked Sendable` carries a `Sendable:` comment saying why it is safe
/// (`scripts/lint-sendable.sh` checks that).
let v6: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "FingerAuth",
    products: [
        .library(name: "pam_fingerauth", type: .dynamic, targets: ["PAMFingerAuth"]),
        .executable(name: "fingerauth-login", targets: ["FingerAuthLogin"]),
        .executable(name: "fingerauth", targets: ["FingerAuthCLI"]),
        .executable(name: "fingerauthd", targets: ["FingerAuthDaemon"]),
        .executable(name: "fingerauth-agent", targets: ["FingerAuthAgent"]),
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
        // fork + execveat of the login helper: the child runs async-signal-safe C only.
        .target(name: "CSpawn"),

        // Plain Swift: config, JSON, JWT, claims, the login decision. No C, no Foundation.
        .target(name: "FingerAuthCore", swiftSettings: v6),
        // Thin adapters over the system and the C libraries.
        .target(name: "FingerAuthSystem", dependencies: ["FingerAuthCore", "CSystem", "CSpawn"], swiftSettings: v6),
        // Threads of their own (pthread_create) for fingerauthd's writer, pruner and watchdogs:
        // apart from FingerAuthSystem, so that the module, which links System, cannot reach it.
        .target(name: "FingerAuthThreads", swiftSettings: v6),
        .target(
            name: "FingerAuthCrypto", dependencies: ["FingerAuthCore", "FingerAuthSystem", "COpenSSL"],
            swiftSettings: v6),
        .target(
            name: "FingerAuthHTTP", dependencies: ["FingerAuthCore", "FingerAuthSystem", "CLibSSL", "CSystem"],
            swiftSettings: v6),
        // TPM-resident device keys and the host's half of key attestation (ESAPI). Linked by
        // the login helper and the command line only, never by the module or the server.
        .target(
            name: "FingerAuthTPM", dependencies: ["FingerAuthCore", "FingerAuthSystem", "FingerAuthCrypto", "CTSS2"],
            swiftSettings: v6),
        .target(
            name: "FingerAuthReader", dependencies: ["FingerAuthCore", "FingerAuthSystem", "CFPrint"], swiftSettings: v6
        ),
        // The host's offline grants: the grant kept per user, the pinned grant keys, the signed
        // log of offline logins and its upload. Linked by the login helper and the command line.
        .target(
            name: "FingerAuthOffline", dependencies: ["FingerAuthCore", "FingerAuthSystem", "FingerAuthCrypto"],
            swiftSettings: v6),
        // fingerauthd, in layers. The domain: the registry's types, the storage ports, the
        // service and its steps, the token verifier, the limits, the policy — plain Swift over
        // FingerAuthCore, no C bridge; cryptography reaches it through Core's protocols.
        .target(name: "FingerAuthDomain", dependencies: ["FingerAuthCore"], swiftSettings: v6),
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
        .target(
            name: "PAMFingerAuth",
            dependencies: ["FingerAuthCore", "FingerAuthSystem", "CPAM", "CSystem"],
            exclude: ["exports.map"],
            swiftSettings: v6,
            linkerSettings: [.unsafeFlags(moduleLinkerFlags)]),
        .executableTarget(
            name: "FingerAuthLogin",
            dependencies: [
                "FingerAuthCore", "FingerAuthSystem", "FingerAuthReader",
                "FingerAuthCrypto", "FingerAuthHTTP", "FingerAuthTPM", "FingerAuthOffline", "CSystem",
            ],
            swiftSettings: v6, linkerSettings: staticRuntime),
        // The root service for PAM hosts that run as the user (screen lockers): the same
        // login decision and helper as the module, for the caller's own user only.
        .executableTarget(
            name: "FingerAuthAgent",
            dependencies: ["FingerAuthCore", "FingerAuthSystem", "CSystem"],
            swiftSettings: v6, linkerSettings: staticRuntime),
        .executableTarget(
            name: "FingerAuthCLI",
            dependencies: [
                "FingerAuthCore", "FingerAuthSystem", "FingerAuthCrypto",
                "FingerAuthHTTP", "FingerAuthReader", "FingerAuthTPM", "FingerAuthOffline",
            ],
            swiftSettings: v6, linkerSettings: staticRuntime),
        .executableTarget(
            name: "FingerAuthDaemon",
            dependencies: [
                "FingerAuthCore", "FingerAuthSystem", "FingerAuthCrypto", "FingerAuthDomain",
                "FingerAuthStore", "FingerAuthTransport", "FingerAuthConsole",
            ],
            swiftSettings: v6, linkerSettings: staticRuntime),

        .testTarget(name: "FingerAuthCoreTests", dependencies: ["FingerAuthCore"], swiftSettings: v6),
        .testTarget(name: "FingerAuthSystemTests", dependencies: ["FingerAuthSystem", "CSystem"], swiftSettings: v6),
        // One test target per library where its tests need nothing else; FingerAuthServerTests
        // drives the service over the real stores: the registry's tests run one body on SQLite
        // and on PostgreSQL (libpq only makes and drops each test's database), the group
        // commit and the endpoints run over SQLite.
        .testTarget(
            name: "FingerAuthCryptoTests",
            dependencies: [
                "FingerAuthCrypto", "FingerAuthDomain", "FingerAuthCore", "FingerAuthSystem",
                "FingerAuthThreads",
            ],
            swiftSettings: v6),
        .testTarget(
            name: "FingerAuthHTTPTests", dependencies: ["FingerAuthHTTP", "FingerAuthCore"], swiftSettings: v6),
        .testTarget(
            name: "FingerAuthDomainTests", dependencies: ["FingerAuthDomain", "FingerAuthCore"], swiftSettings: v6),
        .testTarget(name: "FingerAuthWebTests", dependencies: ["FingerAuthWeb"], swiftSettings: v6),
        .testTarget(
            name: "FingerAuthTransportTests",
            dependencies: ["FingerAuthTransport", "FingerAuthDomain", "FingerAuthWeb", "FingerAuthSystem"],
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
