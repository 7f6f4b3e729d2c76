// osh-edge-dev — the development executable: the demo, the development node, the benches, and
// the agent with OSHSimulation linked (`source = "simulated"`). Not in the .deb; the service
// binary is osh-edge. Parses arguments, calls OSHDevTools/OSHAgent, prints.
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHEdgeCommands
import OSHDevNode
import OSHDevTools
import OSHSimulation

let usage = """
    usage: osh-edge-dev <command> [options]

    The development executable (not in the .deb): everything that needs a simulator or the
    development node. Every other command is osh-edge's.

    commands:
      demo                 the whole agent on this machine: the built-in development node on
                           loopback, a simulated board (I²C chips read by the real drivers, a WAV through
                           ALSA, a test pattern through libx264), commands sent to itself through the node,
                           a live table of what each datastream sent
             --duration S  --format om+json|swe+json  --state-dir DIR  --uid UID  --label LABEL
             --audio-wav FILE|none  the simulated microphone (default: generated pink noise, −20 dBFS)
             --no-camera  --camera-fps F (default 5)  --no-commands  --no-record
             --gps-log FILE|none  an NMEA log replayed through a pseudo-terminal for gps_data
                           (default none: simulated positions; e.g. Tests/OSHCoreTests/Fixtures/nmea/…)
             --node URL [--user NAME]  use an external node (password from OSH_EDGE_PASSWORD)
             --insecure-trust-cert PEM | --pin-sha256 BASE64   TLS for that node
      node                 run the development node alone  --port N (default 8181)  --user NAME:PASS
             --journal FILE  keep systems, datastreams, control streams and sampling features (and
                           their ids) across restarts: changes are appended to FILE, replayed at start
             --ledger FILE  append a line per system, datastream and observation accepted and per
                           datastream deleted (node-start/system/datastream/obs/deleted), before answering
             --control-stdin  steer it from standard input, one answer per line (ok LINE | error WHY):
                           mode normal|refuse|status N|delay S|reset|reject N, delete OUTPUT, stats
             --osh-in-memory-store  answer every datastream PUT with 500, as osh-core's in-memory store does
             --refuse-receivers  close each command receiver with 1011 right after the upgrade, as osh-core
                           does with security on ("Permission denied: … No user specified")
             --mqtt-broker mqtt://HOST:PORT  also store the observations that broker receives on OSH's MQTT
                           topics (/api/datastreams/+/observations, or the Part 3 draft's …:data/+)
      run                  the agent as osh-edge runs it, with the simulation linked: outputs with
                           source = "simulated" run on the demo's simulated chips
                           --config FILE (default /etc/osh-edge/osh-edge.conf)  --secrets FILE
      config check [FILE]  validate a configuration file (source = "simulated" accepted)
      calibrate mag --simulated   the magnetometer calibration against a tumbling simulated MPU-9250
                           (other options as osh-edge calibrate mag)
      bench encode         encode each scalar output (O&M single, O&M batch of 50, swe+json)
             --count N (default 200000)  --output NAME  --format om+json|swe+json  --batch 1|50
      bench publish        the publisher against a node  --node URL|none  --count N  --backlog N
      bench baro           barometer compensation and driver read, ns/sample  --count N (default 1000000)
      bench audio          CPU per second of 48 kHz audio metered: the meter alone, and ALSA capture
                           (file plugin) + meter   --seconds N  --path meter|alsa  --format S16_LE|S32_LE
                           --channels N
      bench video          libx264 frames/s and bytes/frame at 640x480 and 1280x720, 1 thread and auto
             --frames N (default 200)  --size WxH  --threads N|auto  --keyint N  --fps F  --bitrate KBPS
      bench imu            one IMU sample through each driver on the simulated bus [--chip NAME] [--count N]
      bench fusion         fusion updates/s and allocations  --count N  --algorithm madgwick|mahony
      bench spool          an outage's overflow into the spool and its drain, obs/s and bytes/obs
             --count N  --sync record|second|never  --dir DIR (default under /tmp)
      version (--version)  this build and the C libraries it is linked with
      help                 this text
    """

// Before any agent runs: `source = "simulated"` and the demo's chips come from OSHSimulation.
DemoSimulation.install()
var (command, args) = commandLine(usage: usage)
switch command {
case "demo": demo(&args)
case "node": node(&args)
case "bench": bench(&args)
case "run": runServiceCommand(&args)
case "config": runConfigCommand(&args)
case "calibrate":
    runCalibrateCommand(
        args.rest,
        simulatedBoard: LinkedMagSimulation(
            bus: { try MagCalibrationRun.simulatedBus() },
            offset: MagCalibrationRun.simulatedOffset))
case "version", "--version": printVersion(&args, extra: [("libmicrohttpd", DevNode.libraryVersion)])
case "help", "--help", "-h": print(usage)
default: fail("unknown command '\(command)' (osh-edge-dev has the development commands; the others are osh-edge's)\n\(usage)")
}
