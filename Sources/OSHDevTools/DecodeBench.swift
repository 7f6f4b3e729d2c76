import OSHCore
import OSHPlatform
import OSHAgent
import OSHSimulation

/// `osh-edge-dev bench baro`: the cost of one barometer sample — the compensation alone (OSHCore), and
/// a whole driver read (burst into the reused buffer + compensation) against a plain register
/// file, so that only the driver's own work is timed (the simulated chips allocate to model
/// conversions; a real bus does not). Allocations are counted from outside, as for `bench encode`:
/// `valgrind osh-edge-dev bench baro --count N` at N and 2N (see the report in the commit).
public enum BarometerBench {
    public struct Result: Sendable {
        public var chip: String
        /// "compensate" or "driver read".
        public var stage: String
        public var nanosPerSample: Double
    }

    /// A bus that serves one 256-byte register file at any address, without allocating.
    final class RegisterFileBus: I2CBus {
        let number = 0
        private let regs: UnsafeMutablePointer<UInt8>
        private var pointer = 0
        init(_ registers: [UInt8]) {
            regs = .allocate(capacity: 256)
            regs.initialize(repeating: 0, count: 256)
            for (i, b) in registers.prefix(256).enumerated() { regs[i] = b }
        }
        deinit { regs.deallocate() }
        func transfer(address: UInt8, write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
            if let first = write.first { pointer = Int(first) }
            for b in write.dropFirst() { regs[pointer] = b; pointer = (pointer + 1) & 0xFF }
            for i in 0..<read.count { read[i] = regs[pointer]; pointer = (pointer + 1) & 0xFF }
        }
    }

    /// Times `count` samples per chip and stage. `checksum` keeps the optimiser from removing the work.
    public static func run(count: Int) throws -> (results: [Result], checksum: Double) {
        var results: [Result] = []
        var sum = 0.0
        let n = max(1, count)
        func time(_ chip: String, _ stage: String, _ body: (Int) throws -> Double) rethrows {
            let t0 = Clock.monotonicNanoseconds()
            for i in 0..<n { sum += try body(i) }
            results.append(Result(chip: chip, stage: stage, nanosPerSample: Double(Clock.monotonicNanoseconds() - t0) / Double(n)))
        }
        // Compensation alone, from raw values that vary with i (so nothing is hoisted).
        let bmp = try BMP280Calibration(registers: SimulatedBarometerBoard.bmp280Calibration)
        try time("BMP280", "compensate") { i in
            let t = bmp.temperature(adcT: 519888 &+ Int32(i & 1023))
            return bmp.pressurePa(adcP: 415148 &+ Int32(i & 511), tFine: t.tFine)
        }
        let bme = try BME280Calibration(
            registers: SimulatedBarometerBoard.bme280Calibration, humidity: SimulatedBarometerBoard.bme280HumidityCalibration)
        try time("BME280", "compensate") { i in
            let t = bme.tp.temperature(adcT: 529191 &+ Int32(i & 1023))
            return bme.tp.pressurePa(adcP: 326816 &+ Int32(i & 511), tFine: t.tFine)
                + bme.humidityPercent(adcH: 30281 &+ Int32(i & 255), tFine: t.tFine)
        }
        let b3 = try BMP3Calibration(registers: SimulatedBarometerBoard.bmp3Calibration)
        try time("BMP388", "compensate") { i in
            b3.compensate(uncompensatedT: 8771699 &+ UInt32(i & 1023), uncompensatedP: 7184279 &+ UInt32(i & 511)).pa
        }
        try time("LPS22HB", "compensate") { i in
            let r = LPS22HBRaw(pressure: 4150272 &+ Int32(i & 1023), temperature: 2500)
            return r.pressureHPa + r.celsius
        }
        // Whole driver reads: configure on a simulated chip, copy its registers into a plain file.
        for name in ["BMP280", "BME280", "BMP388", "LPS22HB"] {
            let sim = SimulatedI2CBus(recordsTrace: false)
            let device = try SimulatedBarometerBoard.attach(to: sim, chip: name) { (1001.5, 21.5) }
            let d = try BarometerDrivers.open(bus: sim, chip: name, address: nil)
            var regs = device.registers
            regs[Int(LPS22HBDriver.regStatus)] |= name == "LPS22HB" ? 0x03 : 0
            let file = RegisterFileBus(regs)
            guard let driver = BarometerDrivers.driver(for: d.identity, bus: file, address: d.address) else { continue }
            try driver.identify()
            try driver.readCalibration()
            try time(name, "driver read") { _ in try driver.read()?.pressureHPa ?? 0 }
        }
        return (results, sum)
    }
}
