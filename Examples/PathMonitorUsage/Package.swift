// swift-tools-version:6.0
// A package outside reachd's own targets, written only against Apple's Network framework: on Linux it builds
// unchanged against ReachdNetwork (the integration test PathMonitorIntegrationTests runs it in a namespace).
import PackageDescription

let package = Package(
    name: "PathMonitorUsage",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "reachd", path: "../..")],
    targets: [
        .executableTarget(
            name: "path-monitor-usage",
            dependencies: [.product(name: "ReachdNetwork", package: "reachd", condition: .when(platforms: [.linux]))]
        ),
    ]
)
