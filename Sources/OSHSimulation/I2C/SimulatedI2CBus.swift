#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

// The one I²C mocking seam: a bus on which simulated chips answer transactions the way their
// datasheets say (register maps, IDs, calibration regions, status bits, reset), with faults
// injected per address and every transaction recorded. Tests and the demo drive the real
// drivers through it.

/// A chip on the simulated bus.
public protocol SimulatedI2CDevice: AnyObject {
    /// One transaction addressed to this chip: `write`, then after a repeated start `read`.
    /// Throw `SimulatedI2CFault` to model a chip that NACKs or corrupts the bus.
    func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws
}

/// A failure the simulated bus produces, mapped to the errno a Linux adapter would give.
public enum SimulatedI2CFault: Error, Sendable, Equatable {
    /// No ACK: as bcm2835 reports it (EREMOTEIO).
    case nack
    /// Bus error (EIO).
    case ioError
    /// Clock stretched past the adapter's timeout (ETIMEDOUT) — the BNO055-on-a-Pi failure.
    case timeout

    var errno: Int32 {
        switch self {
        case .nack: return EREMOTEIO
        case .ioError: return EIO
        case .timeout: return ETIMEDOUT
        }
    }
}

public final class SimulatedI2CBus: I2CBus {
    public let number: Int

    /// One recorded transaction.
    public struct Transaction: Equatable, CustomStringConvertible {
        public var address: UInt8
        public var written: [UInt8]
        public var readCount: Int
        public var read: [UInt8]
        public var fault: SimulatedI2CFault?
        public var description: String {
            let hex = { (b: [UInt8]) in
                b.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined(separator: " ")
            }
            return "@\(String(address, radix: 16)) w[\(hex(written))] r\(readCount)[\(hex(read))]" + (fault.map { " \($0)" } ?? "")
        }
    }

    /// Recorded transactions (off by default in the demo: it would grow without bound).
    public private(set) var trace: [Transaction] = []
    public var recordsTrace: Bool
    /// Transactions attempted per address (counted even when the trace is off).
    public private(set) var transactionCount: [UInt8: Int] = [:]

    private var devices: [UInt8: SimulatedI2CDevice] = [:]
    private var faults: [UInt8: (fault: SimulatedI2CFault, remaining: Int)] = [:]
    /// Faults another process sets (`faultFile`), kept apart from `inject` so neither clears the other.
    private var faultFileWatch: FaultFileWatch?

    /// `faultFile`: a file of `i2c fail 0xADDR` lines another process (the soak) edits; see `FaultFileWatch`.
    public init(number: Int = 1, recordsTrace: Bool = true, faultFile: String? = nil) {
        self.number = number
        self.recordsTrace = recordsTrace
        faultFileWatch = faultFile.map { FaultFileWatch(path: $0, bus: number) }
    }

    /// The environment variable naming the fault file the demo's bus watches.
    public static let faultFileVariable = "OSH_EDGE_SIM_FAULTS"

    /// The fault file `OSH_EDGE_SIM_FAULTS` names, nil when unset or empty.
    public static func faultFileFromEnvironment() -> String? {
        guard let v = getenv(faultFileVariable).map({ String(cString: $0) }), !v.isEmpty else { return nil }
        return v
    }

    /// Addresses the fault file currently fails (tests, logs).
    public var fileFailedAddresses: Set<UInt8> { faultFileWatch?.failing ?? [] }

    public func attach(_ device: SimulatedI2CDevice, at address: UInt8) { devices[address] = device }
    public func detach(address: UInt8) { devices[address] = nil }
    public func device(at address: UInt8) -> SimulatedI2CDevice? { devices[address] }
    public var addresses: [UInt8] { devices.keys.sorted() }

    /// The next `times` transactions to `address` fail with `fault` (Int.max: until cleared).
    public func inject(_ fault: SimulatedI2CFault, at address: UInt8, times: Int = .max) {
        faults[address] = (fault, times)
    }

    public func clearFaults(at address: UInt8) { faults[address] = nil }
    public func clearTrace() { trace.removeAll() }

    public func transfer(address: UInt8, write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        transactionCount[address, default: 0] += 1
        var fault: SimulatedI2CFault?
        // On the transaction path: no timer, no wake-up of its own.
        faultFileWatch?.refresh(now: Clock.monotonicNanoseconds())
        if faultFileWatch?.failing.contains(address) == true {
            // A chip gone from the bus: nothing ACKs its address.
            fault = .nack
        } else if let f = faults[address], f.remaining > 0 {
            fault = f.fault
            faults[address] = f.remaining == .max ? f : (f.fault, f.remaining - 1)
        } else if let device = devices[address] {
            do { try device.transfer(write: write, read: read) } catch let f as SimulatedI2CFault { fault = f }
        } else {
            fault = .nack
        }
        if recordsTrace {
            trace.append(
                Transaction(
                    address: address, written: Array(write), readCount: read.count,
                    read: fault == nil ? Array(read) : [], fault: fault))
        }
        if let f = fault {
            throw I2CError(
                I2CError.kind(forErrno: f.errno), bus: number, address: address, errno: f.errno,
                operation: LinuxI2CBus.describe(write: write, readCount: read.count))
        }
    }
}

/// The fault file another process edits while the agent runs (the soak's I²C chip failing and
/// returning): one fault per line, `i2c fail 0x68` (every transaction to 0x68 NACKs, as when the
/// chip is unplugged); `#` starts a comment; lines for other kinds of fault (not starting with
/// `i2c`) are left to whoever reads them. A line removed: the chip answers again. No file: no
/// faults. Looked at no more than once per `interval` (stat; re-read when it changed).
final class FaultFileWatch {
    let path: String
    let bus: Int
    let interval: UInt64
    private(set) var failing: Set<UInt8> = []
    private var lastLook: UInt64?
    /// What the file looked like when last read (nil: absent): mtime, size and inode.
    private var seen: (sec: Int, nsec: Int, size: Int, inode: UInt)?

    init(path: String, bus: Int, interval: UInt64 = 1_000_000_000) {
        self.path = path
        self.bus = bus
        self.interval = interval
    }

    func refresh(now: UInt64) {
        if let last = lastLook, now &- last < interval { return }
        lastLook = now
        var st = stat()
        guard stat(path, &st) == 0 else {
            if seen != nil || !failing.isEmpty { apply([], "\(path) is gone") }
            seen = nil
            return
        }
        let look = (sec: Int(st.st_mtim.tv_sec), nsec: Int(st.st_mtim.tv_nsec), size: Int(st.st_size), inode: UInt(st.st_ino))
        if let s = seen, s == look { return }
        seen = look
        let bytes: [UInt8]
        do { bytes = try StateFiles.read(path, limit: 64 * 1024) ?? [] } catch {
            Log.warning("simulated I²C bus \(bus): cannot read the fault file \(path): \(error); keeping the faults it had")
            return
        }
        let parsed = Self.parse(String(decoding: bytes, as: UTF8.self))
        for p in parsed.problems { Log.warning("\(path):\(p)") }
        apply(parsed.failing, "\(path)")
    }

    private func apply(_ new: Set<UInt8>, _ why: String) {
        guard new != failing else { return }
        failing = new
        let list = new.sorted().map { "0x" + String($0, radix: 16) }.joined(separator: ", ")
        Log.notice("simulated I²C bus \(bus): " + (new.isEmpty ? "no chip fails (\(why))" : "chips failing from \(why): \(list)"))
    }

    /// The addresses `i2c fail` lines name, and each malformed `i2c` line as "LINE: what is wrong".
    static func parse(_ text: String) -> (failing: Set<UInt8>, problems: [String]) {
        var failing: Set<UInt8> = []
        var problems: [String] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard words.first == "i2c" else { continue }
            if words.count == 3, words[1] == "fail", let a = address(words[2]) {
                failing.insert(a)
            } else {
                problems.append("\(n + 1): '\(line)' is not a fault this bus knows; write `i2c fail 0x68` (a 7-bit address)")
            }
        }
        return (failing, problems)
    }

    private static func address(_ w: Substring) -> UInt8? {
        let v = w.hasPrefix("0x") || w.hasPrefix("0X") ? UInt8(w.dropFirst(2), radix: 16) : UInt8(w)
        return v.flatMap { $0 <= 0x7F ? $0 : nil }
    }
}

/// A chip modelled as a 256-byte register file with an auto-incrementing pointer — what most
/// sensors are. The first written byte sets the pointer; further bytes are register writes.
/// Subclasses override `readRegister`/`writeRegister` for status bits, read-only and
/// self-clearing registers, banks and resets.
open class RegisterMapDevice: SimulatedI2CDevice {
    public var registers: [UInt8]
    public var pointer: UInt8 = 0
    /// Register writes seen, in order (register, value): what a test asserts configuration with.
    public private(set) var writes: [(register: UInt8, value: UInt8)] = []

    /// Forgets the recorded writes (a test asserting one configuration pass after another).
    public func clearWrites() { writes.removeAll() }

    public init(registers: [UInt8: UInt8] = [:]) {
        self.registers = [UInt8](repeating: 0, count: 256)
        for (r, v) in registers { self.registers[Int(r)] = v }
    }

    /// Stores bytes at consecutive registers (calibration regions, data bursts).
    public func load(_ bytes: [UInt8], at register: UInt8) {
        for (i, b) in bytes.enumerated() where Int(register) + i < 256 { registers[Int(register) + i] = b }
    }

    /// The pointer after `register` (chips differ: some wrap within a block). Default: +1, wraps at 256.
    open func nextRegister(after register: UInt8) -> UInt8 { register &+ 1 }

    open func readRegister(_ register: UInt8) -> UInt8 { registers[Int(register)] }

    open func writeRegister(_ register: UInt8, _ value: UInt8) { registers[Int(register)] = value }

    open func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws {
        if let first = write.first {
            pointer = first
            for b in write.dropFirst() {
                writes.append((pointer, b))
                writeRegister(pointer, b)
                pointer = nextRegister(after: pointer)
            }
        }
        for i in 0..<read.count {
            read[i] = readRegister(pointer)
            pointer = nextRegister(after: pointer)
        }
    }
}
