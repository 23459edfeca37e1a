// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Postern",
    products: [
        .executable(name: "postern", targets: ["postern"]),
        .library(name: "PosternCore", targets: ["PosternCore"]),
        .library(name: "DirectusStandIn", targets: ["DirectusStandIn"]),
    ],
    targets: [
        .systemLibrary(name: "CEvent", path: "Sources/CEvent", pkgConfig: "libevent_openssl"),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl"),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3"),
        // No pkgConfig: hiredis.pc's Cflags carry -D_FILE_OFFSET_BITS=64, which SwiftPM drops with a warning on
        // every build; the shim includes <hiredis/...> from /usr/include and the module map links hiredis.
        .systemLibrary(name: "CHiredis", path: "Sources/CHiredis", providers: [.apt(["libhiredis-dev"])]),
        // Node's http-parser: no pkg-config file either; the module map links it.
        .systemLibrary(name: "CHTTPParser", path: "Sources/CHTTPParser", providers: [.apt(["libhttp-parser-dev"])]),
        .target(name: "PosternCore", dependencies: ["CEvent", "COpenSSL", "CSQLite", "CHiredis", "CHTTPParser"]),
        .target(name: "DirectusStandIn", dependencies: ["PosternCore", "COpenSSL"]),
        .executableTarget(name: "postern", dependencies: ["PosternCore", "DirectusStandIn"]),
        .executableTarget(name: "postern-bench-sessions", dependencies: ["PosternCore"]),
        .executableTarget(name: "postern-bench-json", dependencies: ["PosternCore"]),
        .testTarget(name: "PosternCoreTests", dependencies: ["PosternCore", "DirectusStandIn"]),
    ],
    swiftLanguageModes: [.v6]
)
