#if canImport(Glibc)
import Glibc
#endif
import OSHCore

/// Sensirion SHT40, SHT41 and SHT45 (one command set; the bus cannot tell them apart). No
/// register map: each command is one byte, its answer is read after the command's time. The
/// chip has no ID register, so it is recognised by reading its serial number and checking both
/// words' CRCs. Measurements are pipelined: each read collects the one started at the previous
/// read and starts the next, so the event loop never waits on the chip.
public final class SHT4xDriver: HygrometerDriver {
    public static let sht4x = I2CChipIdentity(
        name: "SHT4x", kind: .hygrometer, addresses: [0x44, 0x45, 0x46], idRegister: nil, idValues: [],
        note: "SHT40/SHT41/SHT45: 0x44 on most breakouts (SHT40-AD1B), 0x45 and 0x46 are other SHT40 part numbers; "
            + "recognised by its serial number's CRC",
        measures: [.temperature, .humidity], aliases: ["SHT40", "SHT41", "SHT45"])

    /// The driver table's entry.
    public static let chip = HygrometerChip(identity: sht4x) { SHT4xDriver(bus: $0, address: $1) }

    public let identity = SHT4xDriver.sht4x
    public let bus: I2CBus
    public let address: UInt8
    /// The serial number read by `identify`.
    public private(set) var serialNumber: UInt32?
    /// Answers that were the serial number where a measurement was due (dropped).
    public private(set) var serialNumberAnswers = 0
    private var measuring = false
    private let answer: UnsafeMutableRawBufferPointer
    private let command: UnsafeMutableRawBufferPointer

    public init(bus: I2CBus, address: UInt8) {
        self.bus = bus
        self.address = address
        answer = .allocate(byteCount: SHT4x.answerBytes, alignment: 1)
        answer.initializeMemory(as: UInt8.self, repeating: 0)
        command = .allocate(byteCount: 1, alignment: 1)
        command.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit {
        answer.deallocate()
        command.deallocate()
    }

    private func send(_ c: UInt8) throws {
        command[0] = c
        try bus.transfer(
            address: address, write: UnsafeRawBufferPointer(command), read: UnsafeMutableRawBufferPointer(start: nil, count: 0))
    }

    private func receive() throws {
        try bus.transfer(address: address, write: UnsafeRawBufferPointer(start: nil, count: 0), read: answer)
    }

    /// The answer's two words (temperature and humidity, or the serial number's halves).
    private var answerWords: UInt32 {
        UInt32(answer[0]) << 24 | UInt32(answer[1]) << 16 | UInt32(answer[3]) << 8 | UInt32(answer[4])
    }

    private static func wait(_ seconds: Double) { usleep(UInt32(seconds * 1e6)) }

    public func identify() throws {
        try send(SHT4x.readSerialNumber)
        Self.wait(SHT4x.commandSeconds)
        try receive()
        do {
            let (hi, lo) = try SHT4x.words(UnsafeRawBufferPointer(answer), what: "reading the serial number")
            serialNumber = UInt32(hi) << 16 | UInt32(lo)
        } catch {
            throw I2CError(
                .unexpectedResponse, bus: bus.number, address: address,
                operation: "identifying an SHT4x: \(error) — another chip at this address?")
        }
    }

    public func start() throws {
        measuring = false
        try send(SHT4x.softReset)
        Self.wait(SHT4x.commandSeconds)
        try send(SHT4x.measureHighPrecision)
        measuring = true
    }

    public func read() throws -> HygrometerReading? {
        guard measuring else {
            try send(SHT4x.measureHighPrecision)
            measuring = true
            return nil
        }
        // A read too soon after the command is NACKed by the chip (still measuring): absent-looking,
        // but the poller's rate (at most 10 Hz here) leaves it well past 10 ms.
        try receive()
        measuring = false
        let r: HygrometerReading
        do {
            r = try SHT4x.reading(UnsafeRawBufferPointer(answer))
        } catch {
            try send(SHT4x.measureHighPrecision)
            measuring = true
            throw I2CError(.busFault, bus: bus.number, address: address, operation: "\(error)")
        }
        try send(SHT4x.measureHighPrecision)
        measuring = true
        // The chip answers whoever reads next, not whoever asked: another program's
        // read-serial-number command between our measure command and this read hands us its
        // answer, whose CRCs hold. A measurement equal to the serial number is that, not the air.
        if let sn = serialNumber, answerWords == sn {
            serialNumberAnswers += 1
            if serialNumberAnswers == 1 {
                let e = I2CError(
                    .unexpectedResponse, bus: bus.number, address: address,
                    operation: "reading a measurement: the chip answered with its serial number, so another program sent it "
                        + "a command (a script, i2cget?); that reading is dropped (said once)")
                Log.warning("hygrometer SHT4x: \(e)")
            }
            return nil
        }
        return r
    }
}
