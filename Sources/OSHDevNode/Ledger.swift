// `osh-edge-dev node --ledger FILE`: what the node accepted, one text line per event, for a soak
// that must count every observation the agent delivered. Lines are collected while a request is
// handled (under the node's lock) and appended with one write(2) once it succeeded, before the
// answer is sent: an answered 201 is always in the file, and a SIGKILL cannot lose a line (no
// user-space buffer; O_APPEND keeps restarted nodes' lines whole). No fsync: the page cache
// survives the process. Lines (epochs in seconds with 6 decimals):
//   node-start <epoch> pid=<pid>
//   system <epoch> <systemUID> <systemID>
//   datastream <epoch> <outputName> <datastreamID> <systemID>
//   obs <arrival epoch> <outputName> <phenomenonTime epoch> <datastreamID>
//   deleted <epoch> datastream <outputName> <datastreamID>
#if canImport(Glibc)
import Glibc
#endif

final class DevNodeLedger {
    let path: String
    private let fd: Int32
    /// The lines of the request being handled, written by `commit()` or dropped by `discard()`.
    private(set) var pending: [UInt8] = []
    /// Commits that failed (their lines are missing from the file).
    private(set) var writeErrors = 0

    /// Opens (creates) the file for appending and writes the `node-start` line.
    init(path: String) throws {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw DevNodeError.ledger("cannot open the ledger \(path): \(DevNodeJournal.errnoText(errno)) — name a writable file")
        }
        word("node-start")
        epoch(wallClock())
        word("pid=" + String(getpid()))
        endLine()
        try commit()
    }

    deinit { close(fd) }

    func system(at t: Double, uid: String, id: String) {
        word("system"); epoch(t); word(uid); word(id); endLine()
    }

    func datastream(at t: Double, outputName: String, id: String, systemID: String) {
        word("datastream"); epoch(t); word(outputName); word(id); word(systemID); endLine()
    }

    func observation(arrival: Double, outputName: String, phenomenonTime: Double, datastreamID: String) {
        word("obs"); epoch(arrival); word(outputName); epoch(phenomenonTime); word(datastreamID); endLine()
    }

    func deleted(at t: Double, outputName: String, datastreamID: String) {
        word("deleted"); epoch(t); word("datastream"); word(outputName); word(datastreamID); endLine()
    }

    /// Appends the pending lines in one write(2) (a short write, e.g. a full disk, is continued).
    func commit() throws {
        defer { pending.removeAll(keepingCapacity: true) }
        var done = 0
        while done < pending.count {
            let n = pending.withUnsafeBytes { b -> Int in
                guard let base = b.baseAddress else { return 0 }
                return write(fd, base + done, b.count - done)
            }
            if n <= 0 {
                if n < 0, errno == EINTR { continue }
                writeErrors += 1
                throw DevNodeError.ledger(
                    "cannot append to the ledger \(path): \(DevNodeJournal.errnoText(n < 0 ? errno : ENOSPC)) — "
                        + "free space on its file system; \(pending.count - done) bytes of lines are missing")
            }
            done += n
        }
    }

    /// The request failed: nothing it did is recorded.
    func discard() { pending.removeAll(keepingCapacity: true) }

    // MARK: Formatting (no Foundation, no String(Double): cheap at hundreds of lines a second)

    private func word(_ s: String) {
        if !pending.isEmpty, pending.last != UInt8(ascii: "\n") { pending.append(UInt8(ascii: " ")) }
        pending.append(contentsOf: s.utf8)
    }

    private func endLine() { pending.append(UInt8(ascii: "\n")) }

    private func epoch(_ t: Double) {
        if !pending.isEmpty, pending.last != UInt8(ascii: "\n") { pending.append(UInt8(ascii: " ")) }
        Self.appendFixed6(t, to: &pending)
    }

    /// `t` with exactly 6 decimals, rounded to the microsecond ("nan" when not a finite time).
    static func appendFixed6(_ t: Double, to out: inout [UInt8]) {
        let micros = (t * 1e6).rounded()
        guard micros.isFinite, abs(micros) < 9e18 else {
            out.append(contentsOf: "nan".utf8)
            return
        }
        var m = Int64(micros)
        if m < 0 {
            out.append(UInt8(ascii: "-"))
            m = -m
        }
        appendDigits(UInt64(m / 1_000_000), minimum: 1, to: &out)
        out.append(UInt8(ascii: "."))
        appendDigits(UInt64(m % 1_000_000), minimum: 6, to: &out)
    }

    private static func appendDigits(_ v: UInt64, minimum: Int, to out: inout [UInt8]) {
        let start = out.count
        var x = v
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(x % 10))
            x /= 10
        } while x > 0 || out.count - start < minimum
        out[start...].reverse()
    }
}
