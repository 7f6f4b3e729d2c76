// Typed outputs: one small value type per output that writes its values under their
// leaf names. `SampleSlots` checks those names against the output's record once, when the
// pipeline is built, and from then on writes each value into its slot without looking at
// a name: a sample that names a leaf the record lacks, misses one, or writes one twice is
// refused at start, and a record whose leaves are reordered still gets every value in the
// right place — the fixed layout is no longer implied by the order of assignments.

/// One output's values: `write` calls `slots.set(leafName, value)` once per value leaf, in a
/// fixed order (no branches: the order seen at start is the order used ever after).
public protocol OutputSample {
    static var kind: OutputKind { get }
    /// A sample with every value zero (used once, to learn the names it writes).
    init()
    func write(to slots: inout SlotWriter)
}

/// What `OutputSample.write` writes through: while `SampleSlots` is being checked it records
/// the names; afterwards it puts the k-th value into the slot found for the k-th name.
public struct SlotWriter {
    fileprivate var names: [String] = []
    fileprivate let recording: Bool
    fileprivate let slotOfCall: UnsafeMutableBufferPointer<Int>
    fileprivate let values: UnsafeMutableBufferPointer<Double>
    fileprivate var call = 0

    public mutating func set(_ leafName: StaticString, _ value: Double) {
        if recording {
            names.append(leafName.description)
            return
        }
        values[slotOfCall[call]] = value
        call += 1
    }
}

public struct OutputLayoutError: Error, Equatable, CustomStringConvertible {
    public let description: String
}

/// A verified way from samples of type `S` into one output's values (its leaves after the time,
/// in record order): the values buffer the ring copies from.
public final class SampleSlots<S: OutputSample> {
    public let outputName: String
    public let valueCount: Int
    private let slotOfCall: UnsafeMutableBufferPointer<Int>
    private let values: UnsafeMutableBufferPointer<Double>

    /// Checks `S`'s leaf names against `spec`'s record; the error names the output, the sample
    /// type and the leaf that does not match.
    public init(spec: OutputSpec) throws(OutputLayoutError) {
        outputName = spec.outputName
        let what = "output \(spec.outputName) (\(S.self))"
        if spec.kind != .other, spec.kind != S.kind {
            throw OutputLayoutError(description: "\(what): the output is a \(spec.kind.rawValue), the sample a \(S.kind.rawValue)")
        }
        let valueLeaves = spec.leaves.filter { !$0.component.isObservationTime }
        let leafNames = valueLeaves.map { $0.names.last ?? "" }
        valueCount = leafNames.count
        var recorder = SlotWriter(recording: true, slotOfCall: UnsafeMutableBufferPointer(start: nil, count: 0),
                                  values: UnsafeMutableBufferPointer(start: nil, count: 0))
        S().write(to: &recorder)
        let written = recorder.names
        var slots: [Int] = []
        for name in written {
            guard let slot = leafNames.firstIndex(of: name) else {
                throw OutputLayoutError(description: "\(what) writes '\(name)', which is not a leaf of the record "
                                        + "(its leaves: \(leafNames.joined(separator: ", "))); rename the sample's field")
            }
            if slots.contains(slot) { throw OutputLayoutError(description: "\(what) writes '\(name)' twice") }
            slots.append(slot)
        }
        if let missing = leafNames.first(where: { !written.contains($0) }) {
            throw OutputLayoutError(description: "\(what) never writes leaf '\(missing)'; the record has "
                                    + "\(leafNames.count) values, the sample \(written.count)")
        }
        slotOfCall = .allocate(capacity: max(slots.count, 1))
        for (k, s) in slots.enumerated() { slotOfCall[k] = s }
        values = .allocate(capacity: max(valueCount, 1))
        values.initialize(repeating: .nan)
    }

    deinit {
        slotOfCall.deallocate()
        values.deallocate()
    }

    /// Writes `sample` into the slots and lends them, in leaf order (no allocation).
    public func withValues<R>(_ sample: S, _ body: (UnsafeBufferPointer<Double>) throws -> R) rethrows -> R {
        var w = SlotWriter(recording: false, slotOfCall: slotOfCall, values: values)
        sample.write(to: &w)
        return try body(UnsafeBufferPointer(rebasing: values[0..<valueCount]))
    }
}
