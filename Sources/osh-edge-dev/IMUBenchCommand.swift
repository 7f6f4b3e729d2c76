import OSHAgent
import OSHEdgeCommands
import OSHDevTools
import OSHPlatform

/// `osh-edge-dev bench imu [--chip NAME] [--count N] [--quiet]`
func runIMUBenchCommand(_ a: inout Arguments) {
    let chips = a.value("--chip").map { [$0] } ?? IMUDrivers.identities.map(\.name)
    let count = Int(a.value("--count") ?? "200000") ?? 0
    guard count > 0 else { fail("--count must be a positive integer") }
    let quiet = a.flag("--quiet")
    a.finish()
    Log.muted = true
    print(quiet ? "" : "chip        ns/read  bytes/read  transfers  wire µs @100k  @400k  CPU % @100 Hz (sim)")
    for chip in chips {
        do {
            let r = try IMUBench.run(chip: chip, count: count)
            if quiet { continue }
            print(
                r.chip.padding(10) + format1(r.nanosPerRead).leftPadding(9) + String(r.wireBytesPerRead).leftPadding(12)
                    + String(r.transactionsPerRead).leftPadding(11) + format1(r.wireMicroseconds(atHz: 100_000)).leftPadding(15)
                    + format1(r.wireMicroseconds(atHz: 400_000)).leftPadding(7) + format1(r.nanosPerRead * 100 / 1e7).leftPadding(10))
        } catch {
            fail("\(chip): \(error)", code: 1)
        }
    }
}
