// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "reachd",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Reachability", targets: ["Reachability"]),
        .executable(name: "reachd", targets: ["reachd"]),
        .executable(name: "reachctl", targets: ["reachctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
    ],
    targets: [
        // libnl-route-3 through pkg-config; only ReachdNetlink imports it.
        .systemLibrary(
            name: "CNetlink",
            pkgConfig: "libnl-route-3.0",
            providers: [.apt(["libnl-3-dev", "libnl-route-3-dev"])]
        ),
        // libsystemd through pkg-config: readiness, watchdog and socket activation.
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // The sd-bus vtable of org.reachd.Reachability1 (C macros Swift cannot import) with Swift callbacks.
        .target(name: "CReachdBus", dependencies: ["CSystemd"]),
        // Pure model: snapshot in, verdict out. No I/O.
        .target(name: "ReachdModel"),
        // TOML configuration -> model rules (a small TOML reader: TOMLKit would pull Foundation into the daemon).
        .target(name: "ReachdConfig", dependencies: ["ReachdModel"]),
        // The only module that talks to the kernel (libnl cache manager, sysfs).
        .target(
            name: "ReachdNetlink",
            dependencies: ["CNetlink", "ReachdModel", .product(name: "Logging", package: "swift-log")]
        ),
        // Wire protocol: line framing, request parsing, response encoding. Pure.
        .target(name: "ReachdProtocol", dependencies: ["ReachdModel"]),
        // Daemon services: verdict hub, Unix-socket server, watcher service.
        .target(
            name: "ReachdDaemon",
            dependencies: [
                "ReachdModel", "ReachdConfig", "ReachdNetlink", "ReachdProtocol", "CSystemd", "CReachdBus",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Blocking Unix-socket client used by reachctl and the library.
        .target(name: "ReachdClient", dependencies: ["ReachdProtocol"]),
        // Public Swift library for apps.
        .target(
            name: "Reachability",
            dependencies: [
                "ReachdModel", "ReachdConfig", "ReachdNetlink", "ReachdClient", "ReachdProtocol",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "reachd",
            dependencies: [
                "ReachdDaemon", "ReachdConfig",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "reachctl",
            dependencies: [
                "ReachdClient", "ReachdProtocol", "ReachdModel",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Benchmark driver for bench/run (runs inside a namespace the script sets up).
        .executableTarget(
            name: "reachd-bench",
            dependencies: [
                "CNetlink", "ReachdClient", "ReachdProtocol", "ReachdModel",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "ReachdModelTests", dependencies: ["ReachdModel"]),
        .testTarget(name: "ReachdConfigTests", dependencies: ["ReachdConfig", "ReachdModel"]),
        .testTarget(name: "ReachdProtocolTests", dependencies: ["ReachdProtocol", "ReachdModel"]),
        .testTarget(
            name: "ReachdDaemonTests",
            dependencies: [
                "ReachdDaemon", "ReachdProtocol", "ReachdModel",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "ReachdNetlinkTests", dependencies: ["ReachdNetlink", "ReachdModel"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["ReachdClient", "ReachdProtocol", "ReachdModel", "Reachability"]
        ),
    ]
)
