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
        .target(name: "PosternCore", dependencies: ["CEvent", "COpenSSL", "CSQLite"]),
        .target(name: "DirectusStandIn", dependencies: ["PosternCore", "COpenSSL"]),
        .executableTarget(name: "postern", dependencies: ["PosternCore", "DirectusStandIn"]),
        .executableTarget(name: "postern-bench-sessions", dependencies: ["PosternCore"]),
        .executableTarget(name: "postern-bench-json", dependencies: ["PosternCore"]),
        .testTarget(name: "PosternCoreTests", dependencies: ["PosternCore", "DirectusStandIn"]),
    ],
    swiftLanguageModes: [.v6]
)
