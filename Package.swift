// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "reachd",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Reachability", targets: ["Reachability"]),
        .library(name: "ReachdNetwork", targets: ["ReachdNetwork"]),
        // reachd-transfers' queue for Swift apps, apart so that Reachability stays light.
        .library(name: "ReachabilityTransfers", targets: ["ReachabilityTransfers"]),
        .executable(name: "reachd", targets: ["reachd"]),
        .executable(name: "reachctl", targets: ["reachctl"]),
        .executable(name: "reachd-transfers", targets: ["reachd-transfers"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.24.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.27.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
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
        // The C library's timerfd and adjtimex, which Swift's Glibc module does not export.
        .systemLibrary(name: "CReachdTime"),
        // Pure model: snapshot in, verdict out. No I/O.
        .target(name: "ReachdModel"),
        // TOML configuration -> model rules (a small TOML reader: TOMLKit would pull Foundation into the daemon).
        .target(name: "ReachdConfig", dependencies: ["ReachdModel"]),
        // The operating system below everything that does I/O: the poll thread, small files, inotify, the sd-bus
        // connection and message writing, the system-call funnel (EINTR, typed errno) and the descriptor that
        // closes itself. No package but swift-log, so the libraries stay light.
        .target(
            name: "ReachdSystem",
            dependencies: ["ReachdModel", "CSystemd", "CReachdTime", .product(name: "Logging", package: "swift-log")]
        ),
        // The only module that talks to the kernel (libnl cache manager, sysfs); its thread is the system's PollThread.
        .target(
            name: "ReachdNetlink",
            dependencies: ["CNetlink", "ReachdModel", "ReachdSystem", .product(name: "Logging", package: "swift-log")]
        ),
        // Transfer jobs: states, gating, resume and retry decisions, queue order. Pure.
        .target(name: "ReachdTransferModel", dependencies: ["ReachdModel"]),
        // reachd's wire protocol: line framing, request parsing, response encoding. Pure.
        .target(name: "ReachdProtocol", dependencies: ["ReachdModel"]),
        // reachd-transfers' wire protocol on the same framing: its requests, replies and job lines. Pure.
        .target(name: "ReachdTransferProtocol", dependencies: ["ReachdProtocol", "ReachdTransferModel"]),
        // glibc's malloc_trim and mallopt, which Swift's Glibc module does not export, and the read-only pages of the
        // loaded objects (dl_iterate_phdr) unmapped once a daemon serves.
        .target(name: "CReachdMemory"),
        // glibc's sync_file_range (the download writer), declared only under _GNU_SOURCE.
        .target(name: "CReachdFiles"),
        // Swift Concurrency's global enqueue hook, set by reference: the static runtime of the installed reachd hides
        // it from dlsym, through which NIO's take-over looks for it.
        .target(name: "CReachdExecutor"),
        // The transfer service: job store (GRDB), HTTP (async-http-client), scheduler, its socket server. It judges the
        // network with ReachdMonitor (when reachd does not run) and is built on ReachdServiceKit, never on ReachdDaemon.
        .target(
            name: "ReachdTransfers",
            dependencies: [
                "ReachdModel", "ReachdConfig", "ReachdProtocol", "ReachdClient", "ReachdTransferModel", "ReachdTransferProtocol", "ReachdMonitor",
                "ReachdMetrics", "ReachdServiceKit", "ReachdSystem", "CReachdFiles", "CReachdBus", "CSystemd",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // What both daemons share below their own logic: the listeners' per-user connection limits, idle rule and
        // peer credentials; the socket endpoint (bind, stale-socket rule, socket activation); systemd notify and
        // watchdog; signals; the service group and start-up. On ReachdSystem.
        .target(
            name: "ReachdServiceKit",
            dependencies: [
                "ReachdConfig", "ReachdSystem", "CSystemd", "CReachdMemory", "CReachdFiles",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Prometheus metrics: the HTTP endpoint (SwiftNIO), its start-up and the process metrics, for both daemons.
        .target(
            name: "ReachdMetrics",
            dependencies: [
                "ReachdConfig", "ReachdServiceKit", "ReachdSystem",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // Judging the network in-process, for both daemons and the library: the netlink watcher's snapshots joined
        // with NetworkManager's metered flags (NetworkView), the internet verdict (VerdictHub) and the host targets
        // (HostMonitor: resolve, route, judge).
        .target(
            name: "ReachdMonitor",
            dependencies: [
                "ReachdModel", "ReachdConfig", "ReachdNetlink", "ReachdSystem", "CSystemd",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // reachd's services: the Unix-socket server and its clients, org.reachd.Reachability1 on D-Bus, the
        // connectivity check, reachd's metrics, and the daemon's assembly.
        .target(
            name: "ReachdDaemon",
            dependencies: [
                "ReachdModel", "ReachdConfig", "ReachdNetlink", "ReachdMonitor", "ReachdProtocol", "ReachdMetrics", "ReachdServiceKit", "ReachdSystem", "CSystemd", "CReachdBus",
                "CReachdMemory",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Blocking Unix-socket client used by reachctl and the library, and the one reader of reachd's subscribe
        // stream (SubscribeReader, its reconnect rules the pure SubscribeMachine).
        .target(name: "ReachdClient", dependencies: ["ReachdModel", "ReachdProtocol", "ReachdSystem"]),
        // Blocking Unix-socket client of reachd-transfers, on ReachdClient's connection.
        .target(name: "ReachdTransferClient", dependencies: ["ReachdClient", "ReachdProtocol", "ReachdTransferModel", "ReachdTransferProtocol"]),
        // Public Swift library for apps: in-process on ReachdMonitor (the daemons' own judging), or a client of reachd.
        .target(
            name: "Reachability",
            dependencies: [
                "ReachdModel", "ReachdConfig", "ReachdMonitor", "ReachdClient", "ReachdProtocol",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // reachd-transfers' queue for Swift apps (`TransferQueue`), on the transfer client.
        .target(
            name: "ReachabilityTransfers",
            dependencies: ["ReachdClient", "ReachdProtocol", "ReachdTransferModel", "ReachdTransferClient", "ReachdTransferProtocol"]
        ),
        // Apple's NWPathMonitor API on ReachdMonitor's judging (and reachd's metered word where it runs). Never on
        // ReachdDaemon or ReachdTransfers: an app that depends on it compiles no HTTP client, job store or TLS.
        .target(
            name: "ReachdNetwork",
            dependencies: [
                "ReachdModel", "ReachdConfig", "ReachdMonitor", "ReachdClient", "ReachdProtocol", "ReachdSystem",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "reachd",
            dependencies: [
                "ReachdDaemon", "ReachdMonitor", "ReachdConfig", "ReachdModel", "ReachdProtocol", "ReachdServiceKit", "ReachdSystem",
                "CReachdExecutor",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "reachd-transfers",
            dependencies: [
                "ReachdTransfers", "ReachdTransferModel", "ReachdMonitor", "ReachdConfig", "ReachdModel", "ReachdProtocol", "ReachdServiceKit",
                "ReachdSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // HTTP file server with fault injection, for the transfer tests and the benchmark.
        .executableTarget(
            name: "reachd-testserver",
            dependencies: [
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "reachctl",
            dependencies: [
                "ReachdClient", "ReachdProtocol", "ReachdModel", "ReachdTransferModel", "ReachdTransferClient", "ReachdTransferProtocol", "ReachdSystem", "CSystemd",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Benchmark driver for bench/run (runs inside a namespace the script sets up).
        .executableTarget(
            name: "reachd-bench",
            dependencies: [
                "CNetlink", "ReachdClient", "ReachdProtocol", "ReachdModel", "ReachdSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // What several test targets share: a fake daemon's listening Unix socket (`UnixListener`) and a seeded random
        // generator (`SeededGenerator`). Only tests depend on it.
        .target(name: "ReachdTestSupport", dependencies: ["ReachdSystem", "CReachdTime"], path: "Tests/ReachdTestSupport"),
        .testTarget(name: "ReachdModelTests", dependencies: ["ReachdModel"]),
        .testTarget(name: "ReachdConfigTests", dependencies: ["ReachdConfig", "ReachdModel"]),
        .testTarget(name: "ReachdProtocolTests", dependencies: ["ReachdProtocol", "ReachdModel", "ReachdTestSupport", "ReachdTransferModel", "ReachdTransferProtocol"]),
        .testTarget(name: "ReachdTransferModelTests", dependencies: ["ReachdTransferModel", "ReachdModel", "ReachdTestSupport"]),
        // What reachctl says when a daemon cannot be asked (the messages are built in ReachdClient), and the
        // subscribe reader: its rules' table and the reader against a fake reachd.
        .testTarget(name: "ReachdClientTests", dependencies: ["ReachdClient", "ReachdModel", "ReachdProtocol", "ReachdTestSupport"]),
        .testTarget(
            name: "ReachdTransfersTests",
            dependencies: [
                "ReachdTransfers", "ReachdTransferModel", "ReachdModel", "ReachdProtocol", "CReachdFiles",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Swift Testing with swift-property-based: properties of the parsers and of the resume decision.
        .testTarget(
            name: "ReachdTransferModelPropertyTests",
            dependencies: ["ReachdTransferModel", "ReachdModel", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(
            name: "ReachdDaemonTests",
            dependencies: [
                "ReachdDaemon", "ReachdMonitor", "ReachdProtocol", "ReachdModel", "ReachdServiceKit", "ReachdTestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "ReachdSystemTests", dependencies: ["ReachdSystem", "ReachdTestSupport"]),
        .testTarget(
            name: "ReachdServiceKitTests",
            dependencies: [
                "ReachdServiceKit", "ReachdSystem", "CReachdMemory",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(name: "ReachdNetlinkTests", dependencies: ["ReachdNetlink", "ReachdModel"]),
        // The resolution passes (pure) and HostMonitor on this machine's kernel (address literals: no DNS).
        .testTarget(
            name: "ReachdMonitorTests",
            dependencies: ["ReachdMonitor", "ReachdModel", "ReachdConfig", "ReachdSystem", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "ReachdNetworkTests", dependencies: ["ReachdNetwork", "ReachdModel", "ReachdConfig", "ReachdProtocol", "ReachdSystem", "ReachdTestSupport"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["ReachdClient", "ReachdProtocol", "ReachdModel", "ReachdNetlink", "CNetlink", "ReachdTransferModel", "ReachdTransferClient",
                           "ReachdTransferProtocol", "Reachability", "ReachabilityTransfers", "ReachdTestSupport",
                           .product(name: "Logging", package: "swift-log")]
        ),
    ]
)
