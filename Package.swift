// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Postern",
    products: [
        .executable(name: "postern", targets: ["postern"]),
    ],
    targets: [
        // libevent's loop and its pthreads locking (no evhttp, bufferevents or listeners: the server, the upstream client
        // and Redis drive their own nonblocking sockets), with the socket headers and glibc's accept4.
        .systemLibrary(name: "CEvent", path: "Sources/CEvent", pkgConfig: "libevent_pthreads"),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl"),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3"),
        // No pkgConfig: hiredis.pc's Cflags carry -D_FILE_OFFSET_BITS=64, which SwiftPM drops with a warning on
        // every build; the shim includes <hiredis/...> from /usr/include and the module map links hiredis.
        .systemLibrary(name: "CHiredis", path: "Sources/CHiredis", providers: [.apt(["libhiredis-dev"])]),
        // llhttp, Node's HTTP/1.1 parser, compiled from the C sources of Debian's node-llhttp (Debian has no library
        // package of it): the server's request parser and the upstream client's answer parser.
        // DWARF 4 like the Swift objects: valgrind 3.19 (`make profile` without perf) gives up on Clang's DWARF 5.
        .target(name: "CLLHTTP", path: "Sources/CLLHTTP", cSettings: [.unsafeFlags(["-gdwarf-4"])]),
        // Header only: the transcoder's SSE2/NEON string scanner as `static inline` C (no library to link).
        .systemLibrary(name: "CJSONScan", path: "Sources/CJSONScan"),
        // Header only: the byte-class tests of the plain HTTP head readers (PlainBytes), SSE2/NEON as `static inline` C.
        .systemLibrary(name: "CHeadScan", path: "Sources/CHeadScan"),
        // The layers, lowest first; each knows only the ones below it. docs/architecture.md describes what each
        // target and folder holds and which may use which.
        .target(name: "PosternIO", dependencies: ["CEvent", "COpenSSL"]),
        .target(name: "PosternHTTP", dependencies: ["PosternIO", "CEvent", "COpenSSL", "CLLHTTP", "CJSONScan", "CHeadScan"]),
        .target(name: "PosternRedis", dependencies: ["PosternIO", "CEvent", "COpenSSL", "CHiredis"]),
        .target(name: "DirectusPlan", dependencies: ["PosternIO", "PosternHTTP"]),
        // The console's CSS and JavaScript are files of their own (Console/Resources), compiled in as strings by the
        // EmbedText plugin with the postern-embed tool (no resource bundle: that needs full Foundation).
        .target(name: "PosternCore", dependencies: ["PosternIO", "PosternHTTP", "PosternRedis", "DirectusPlan",
                                                    "COpenSSL", "CSQLite"],
                exclude: ["Console/Resources"], plugins: ["EmbedText"]),
        .executableTarget(name: "postern-embed"),
        .plugin(name: "EmbedText", capability: .buildTool(), dependencies: ["postern-embed"]),
        .target(name: "DirectusStandIn", dependencies: ["PosternIO", "PosternHTTP", "DirectusPlan", "COpenSSL"]),
        // jemalloc (Debian's libjemalloc, unprefixed) takes malloc/free from glibc for the whole process: the Swift
        // runtime allocates every object through them, and with glibc's allocator the gateway spent about 9 % more
        // CPU per request (`make bench`, A). Only the server binary: tests and the bench tools keep glibc's.
        .executableTarget(name: "postern", dependencies: ["PosternCore", "PosternIO", "PosternHTTP", "DirectusStandIn"],
                          linkerSettings: [.linkedLibrary("jemalloc")]),
        .executableTarget(name: "postern-bench-sessions", dependencies: ["PosternCore", "PosternHTTP"]),
        .executableTarget(name: "postern-bench-json", dependencies: ["PosternCore", "PosternHTTP"]),
        // The tests mirror the targets: one test target per library target, plus the end-to-end tests that run the
        // built `postern` binary. Each test target depends only on its own target and a testing library of its level
        // (libraries, since a test target cannot depend on another), so that the tests of a layer build only that
        // layer and the ones below it. PosternTesting, for every level: the test clock, the polling helper, sockets,
        // raw clients, the scriptable upstream, the redis-server and tool runners. PosternCoreTesting, for the
        // gateway's level: the live gateway in front of the Directus stand-in, and the test clock as the gateway
        // reads it.
        .target(name: "PosternTesting", dependencies: ["PosternIO", "PosternHTTP"], path: "Tests/PosternTesting"),
        .target(name: "PosternCoreTesting", dependencies: ["PosternCore", "DirectusStandIn", "PosternTesting"],
                path: "Tests/PosternCoreTesting"),
        .testTarget(name: "PosternIOTests", dependencies: ["PosternIO", "PosternTesting"]),
        .testTarget(name: "PosternHTTPTests", dependencies: ["PosternHTTP", "PosternTesting"]),
        .testTarget(name: "PosternRedisTests", dependencies: ["PosternRedis", "PosternTesting"]),
        .testTarget(name: "PosternCoreTests", dependencies: ["PosternCore", "PosternCoreTesting"]),
        .testTarget(name: "DirectusStandInTests", dependencies: ["DirectusStandIn", "PosternCoreTesting"]),
        .testTarget(name: "PosternEndToEndTests", dependencies: ["PosternCoreTesting"]),
    ],
    swiftLanguageModes: [.v6]
)

// A nonisolated async function runs on its caller's executor (the request's event loop) instead of hopping to the
// global executor and back: fewer task switches per request, each of which takes a lock in the runtime. Every
// Swift target has it, so that function types such as `HTTPHandler` mean (and mangle) the same everywhere.
for target in package.targets where target.type != .system && target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
}

// Release builds skip the runtime exclusivity checks (about 2 % of a request's CPU in `swift_beginAccess`):
// the compile-time checks stay, and debug builds (every test) keep the runtime ones.
for target in package.targets where target.type != .system && target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
}

// Release builds optimise across the targets: a small function of a lower target (a lock, a clock read, a buffer
// append, a header lookup) is inlined or specialised in its callers as it was when everything was one module.
// `-package-cmo` (with `-allow-non-resilient-access`, which it needs) lets that reach `package` declarations too:
// `make instructions` C 20,755 -> 20,648 per request (docs/performance.md).
for target in package.targets where target.type != .system && target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-cross-module-optimization", "-package-cmo",
                                                                           "-allow-non-resilient-access"],
                                                                          .when(configuration: .release))]
}
