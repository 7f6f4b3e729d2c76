// swift-tools-version:6.0
// osh-edge — an OpenSensorHub sensor agent for Raspberry Pi and other ARM Linux boards.
//
// Layers (arrows point down only):
//   osh-edge (executable; what the .deb ships) → OSHEdgeCommands (the command line) → OSHAgent (composition root) → OSHPlatform → OSHCore
//   osh-edge-sim (benchmarks, soak runs; not shipped) → OSHEdgeCommands, OSHSimulation
//   osh-edge-dev (development executable) → OSHEdgeCommands, OSHDevTools (demo, benches) → OSHSimulation, OSHDevNode
//   OSHSimulation (simulated chips, mock V4L2, simulated values) → OSHPlatform; OSHDevNode (libmicrohttpd) → OSHPlatform
//   OSHPlatform → CShim + system-library targets (Debian -dev packages)
// Only osh-edge-dev, osh-edge-sim and the tests link OSHSimulation, and only osh-edge-dev and the tests
// OSHDevNode: the service binary has no simulator and no libmicrohttpd; `source = "simulated"` reaches
// OSHSimulation through OSHPlatform's SimulationHooks, which OSHSimulation's DemoSimulation fills.
// OSHCore is pure Swift with no I/O and no dependencies: it builds and tests on any Linux.
import PackageDescription

let swift6: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "osh-edge",
    products: [
        .executable(name: "osh-edge", targets: ["osh-edge"]),
        .executable(name: "osh-edge-dev", targets: ["osh-edge-dev"]),
        .executable(name: "osh-edge-sim", targets: ["osh-edge-sim"]),
        .library(name: "OSHCore", targets: ["OSHCore"]),
    ],
    targets: [
        // MARK: C layer — what Glibc hides, and the C libraries we build on.
        .target(name: "CShim", path: "Sources/CShim"),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CGPIOD", path: "Sources/CGPIOD", pkgConfig: "libgpiod",
                       providers: [.apt(["libgpiod-dev"])]),
        .systemLibrary(name: "CI2C", path: "Sources/CI2C",
                       providers: [.apt(["libi2c-dev"])]),
        .systemLibrary(name: "CALSA", path: "Sources/CALSA", pkgConfig: "alsa",
                       providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CV4L2", path: "Sources/CV4L2", pkgConfig: "libv4l2",
                       providers: [.apt(["libv4l-dev"])]),
        .systemLibrary(name: "CX264", path: "Sources/CX264", pkgConfig: "x264",
                       providers: [.apt(["libx264-dev"])]),
        .systemLibrary(name: "CMosquitto", path: "Sources/CMosquitto", pkgConfig: "libmosquitto",
                       providers: [.apt(["libmosquitto-dev"])]),
        // OpenSSL, which libmosquitto already links: only the broker's key pin needs its API.
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl",
                       providers: [.apt(["libssl-dev"])]),
        // The C half of the MQTT client: libmosquitto's blocking connect on a thread of its own,
        // and the TLS context that checks the broker's key pin inside the handshake.
        .target(name: "CMQTTShim", dependencies: ["CMosquitto", "COpenSSL"], path: "Sources/CMQTTShim"),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),

        // MARK: Core — SWE model, ordered writers, encoders/decoders, CS API requests, output catalogue.
        // `rounded()` lowers to libm calls; OSHCore imports no C module, so it names libm itself.
        .target(name: "OSHCore", swiftSettings: swift6, linkerSettings: [.linkedLibrary("m")]),

        // MARK: Platform — everything that touches the OS or a C library, thin.
        .target(name: "OSHPlatform",
                dependencies: ["OSHCore", "CShim", "CCurl", "CGPIOD", "CI2C", "CALSA", "CV4L2", "CX264", "CMosquitto", "CMQTTShim"],
                swiftSettings: swift6),

        // MARK: Simulators and replays: datasheet-modelled chips on a simulated I²C bus, a mock V4L2,
        // simulated motion and sensor values. Only the development executable and the tests link it.
        .target(name: "OSHSimulation", dependencies: ["OSHCore", "OSHPlatform", "CShim", "CV4L2"],
                swiftSettings: swift6),

        // MARK: The development node (libmicrohttpd), strict like OSH.
        .target(name: "OSHDevNode", dependencies: ["OSHCore", "OSHPlatform", "CMicroHTTPD", "CMosquitto", "CMQTTShim"],
                swiftSettings: swift6),

        // MARK: Agent — the one composition root.
        .target(name: "OSHAgent", dependencies: ["OSHCore", "OSHPlatform"],
                swiftSettings: swift6),

        // MARK: The command line: option reading and one Agent call per command, then printing. A
        // library, so that osh-edge-sim runs the same main and osh-edge-dev shares run, check and calibrate.
        .target(name: "OSHEdgeCommands", dependencies: ["OSHAgent", "OSHCore", "OSHPlatform"],
                swiftSettings: swift6),
        .executableTarget(name: "osh-edge", dependencies: ["OSHEdgeCommands"], swiftSettings: swift6),

        // The shipped agent plus the simulated sources, no development node: what benchmarks and soak
        // runs use (scripts/footprint.sh). Not in the .deb.
        .executableTarget(name: "osh-edge-sim", dependencies: ["OSHEdgeCommands", "OSHSimulation"],
                          swiftSettings: swift6),

        // MARK: Development: the demo, the benches, the development node, the agent with simulation.
        .target(name: "OSHDevTools",
                dependencies: ["OSHAgent", "OSHCore", "OSHPlatform", "OSHDevNode", "OSHSimulation"],
                swiftSettings: swift6),
        .executableTarget(name: "osh-edge-dev",
                          dependencies: ["OSHDevTools", "OSHEdgeCommands", "OSHAgent", "OSHCore", "OSHPlatform", "OSHDevNode", "OSHSimulation"],
                          swiftSettings: swift6),

        // MARK: Tests mirror the layers.
        // Fixtures are read from the source tree (#filePath), so they are excluded from the build.
        .testTarget(name: "OSHCoreTests", dependencies: ["OSHCore", "OSHSimulation"],
                    exclude: ["Fixtures"], swiftSettings: swift6),
        .testTarget(name: "OSHPlatformTests", dependencies: ["OSHPlatform", "OSHCore", "OSHSimulation", "CShim"],
                    exclude: ["Fixtures"], swiftSettings: swift6),
        // Depends on the executables so the CLI tests can run the binaries that were just built.
        .testTarget(name: "OSHAgentTests",
                    dependencies: ["OSHAgent", "OSHCore", "OSHPlatform", "OSHSimulation", "OSHDevTools", "OSHDevNode",
                                   "osh-edge", "osh-edge-dev", "osh-edge-sim"],
                    swiftSettings: swift6),
        .testTarget(name: "OSHDevNodeTests", dependencies: ["OSHDevNode", "OSHCore", "OSHPlatform"], swiftSettings: swift6),
    ]
)
