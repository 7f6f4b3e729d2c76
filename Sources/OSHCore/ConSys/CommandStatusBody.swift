// The status report of `POST /controlstreams/{csId}/status` (application/json),
// as an OSH node takes it (docs/OSH-NODE.md). The node's path is the control stream's `status` collection
// with `command@id` in the body (the standard's /commands/{id}/status gives 405).
// Key order is the order osh-core's CommandStatusBindingJson writes a report:
// command@id, reportTime, statusCode, [percentCompletion],
// [executionTime], [message]. `executionTime` is OSH's `"t1/t2"` string form;
// the standard's two-element array is answered with 400.

public enum CommandStatusCode: String, Sendable, CaseIterable {
    case pending = "PENDING"
    case accepted = "ACCEPTED"
    case rejected = "REJECTED"
    case scheduled = "SCHEDULED"
    case updated = "UPDATED"
    case canceled = "CANCELED"
    case executing = "EXECUTING"
    case failed = "FAILED"
    case completed = "COMPLETED"

    /// No further report follows one of these.
    public var isFinal: Bool {
        switch self {
        case .rejected, .canceled, .failed, .completed: return true
        default: return false
        }
    }
}

public struct CommandStatus: Sendable, Equatable {
    /// The `id` the node gave the command (as pushed on the command WebSocket).
    public var commandID: String
    public var statusCode: CommandStatusCode
    /// Unix epoch seconds.
    public var reportTime: Double
    /// Execution start and end, Unix epoch seconds (end == start for an instantaneous command).
    public var executionTime: (start: Double, end: Double)?
    public var percentCompletion: Int?
    public var message: String?

    public init(
        commandID: String, statusCode: CommandStatusCode, reportTime: Double,
        executionTime: (start: Double, end: Double)? = nil, percentCompletion: Int? = nil,
        message: String? = nil
    ) {
        self.commandID = commandID
        self.statusCode = statusCode
        self.reportTime = reportTime
        self.executionTime = executionTime
        self.percentCompletion = percentCompletion
        self.message = message
    }

    public static func == (a: CommandStatus, b: CommandStatus) -> Bool {
        a.commandID == b.commandID && a.statusCode == b.statusCode && a.reportTime == b.reportTime
            && a.executionTime?.start == b.executionTime?.start && a.executionTime?.end == b.executionTime?.end
            && a.percentCompletion == b.percentCompletion && a.message == b.message
    }
}

public enum CommandStatusBody {
    public static func write(_ s: CommandStatus, to out: ByteBuffer) {
        var w = JSONWriter(out)
        w.beginObject()
        w.key("command@id"); w.string(s.commandID)
        let report = ISOTime.string(epochSeconds: s.reportTime)
        if !report.isEmpty { w.key("reportTime"); w.string(report) }  // optional on the node; never ""
        w.key("statusCode"); w.string(s.statusCode.rawValue)
        if let p = s.percentCompletion { w.key("percentCompletion"); w.int(Swift.min(100, Swift.max(0, p))) }
        if let e = s.executionTime, e.start.isFinite, e.end.isFinite {
            w.key("executionTime")
            w.string(ISOTime.string(epochSeconds: e.start) + "/" + ISOTime.string(epochSeconds: e.end))
        }
        if let m = s.message, !m.isEmpty { w.key("message"); w.string(m) }
        w.endObject()
    }

    public static func bytes(_ s: CommandStatus) -> [UInt8] {
        let b = ByteBuffer(capacity: 256)
        write(s, to: b)
        return b.array
    }

    public static func string(_ s: CommandStatus) -> String {
        String(decoding: bytes(s), as: UTF8.self)
    }
}
