// The observation ring: one block of fixed-size slots allocated at start.
// A slot holds a datastream index, a CLOCK_MONOTONIC timestamp and up to
// `maxValues` doubles in the output's leaf order. Slots are taken in arrival
// order; the publisher sends each datastream's oldest slots first, so each
// datastream stays in order while datastreams interleave freely.
//
// A slot is live (waiting), in flight (part of a body being sent) or free.
// Sending frees slots anywhere in the ring; the tail skips free slots, and a full
// ring first compacts free slots away before it drops the oldest live one.

public final class ObservationRing {
    public enum SlotState: UInt8 { case free = 0, live = 1, inFlight = 2 }

    public let capacity: Int
    public let maxValues: Int
    public let datastreamCount: Int

    private let ds: UnsafeMutablePointer<UInt16>
    private let state: UnsafeMutablePointer<UInt8>
    private let times: UnsafeMutablePointer<Double>
    private let counts: UnsafeMutablePointer<UInt8>
    private let values: UnsafeMutablePointer<Double>
    /// Live + in-flight slots per datastream.
    private let perDatastream: UnsafeMutablePointer<Int>
    /// Dropped because the ring was full, per datastream.
    private let droppedFull: UnsafeMutablePointer<Int>

    /// Oldest occupied position (slot index = position % capacity) and one past the newest.
    private var tail = 0
    private var head = 0

    /// Occupied span (live, in flight and free-but-not-yet-reclaimed slots).
    public var span: Int { head - tail }
    /// Live + in-flight observations.
    public private(set) var occupied = 0

    public init(capacity: Int, maxValues: Int, datastreams: Int) {
        self.capacity = max(1, capacity)
        self.maxValues = max(1, maxValues)
        self.datastreamCount = max(1, datastreams)
        ds = .allocate(capacity: self.capacity)
        state = .allocate(capacity: self.capacity)
        state.initialize(repeating: SlotState.free.rawValue, count: self.capacity)
        times = .allocate(capacity: self.capacity)
        counts = .allocate(capacity: self.capacity)
        values = .allocate(capacity: self.capacity * self.maxValues)
        perDatastream = .allocate(capacity: datastreamCount)
        perDatastream.initialize(repeating: 0, count: datastreamCount)
        droppedFull = .allocate(capacity: datastreamCount)
        droppedFull.initialize(repeating: 0, count: datastreamCount)
    }

    deinit {
        ds.deallocate(); state.deallocate(); times.deallocate(); counts.deallocate(); values.deallocate()
        perDatastream.deallocate(); droppedFull.deallocate()
    }

    /// Observations of `datastream` in the ring (waiting or in flight).
    public func count(of datastream: Int) -> Int { perDatastream[datastream] }
    /// Observations of `datastream` dropped because the ring was full.
    public func droppedWhenFull(of datastream: Int) -> Int { droppedFull[datastream] }

    // MARK: Writing

    /// Stores an observation. When the ring is full the oldest waiting observation is dropped
    /// and counted against its datastream. Returns false only when nothing could be stored
    /// (every slot is in flight) — then the new observation is the one dropped; the caller counts
    /// it (the publisher's `droppedNoSlot`), so it is not counted twice.
    @discardableResult
    public func push(datastream d: Int, time: Double, values v: UnsafeBufferPointer<Double>) -> Bool {
        precondition(d >= 0 && d < datastreamCount, "datastream index out of range")
        if span == capacity && !makeRoom() { return false }
        let slot = head % capacity
        head += 1
        ds[slot] = UInt16(d)
        state[slot] = SlotState.live.rawValue
        times[slot] = time
        let n = min(v.count, maxValues)
        counts[slot] = UInt8(n)
        let base = values + slot * maxValues
        for i in 0..<n { base[i] = v[i] }
        perDatastream[d] += 1
        occupied += 1
        return true
    }

    @discardableResult
    public func push(datastream d: Int, time: Double, values v: [Double]) -> Bool {
        v.withUnsafeBufferPointer { push(datastream: d, time: time, values: $0) }
    }

    /// Frees one slot's worth of span: reclaim free slots at the tail, else compact, else drop the oldest live.
    private func makeRoom() -> Bool {
        advanceTail()
        if span < capacity { return true }
        if occupied < capacity {
            compact()
            return true
        }
        // Every slot holds an observation: drop the oldest that is not being sent.
        var p = tail
        while p < head {
            let s = p % capacity
            if state[s] == SlotState.live.rawValue {
                let d = Int(ds[s])
                let kept = evict?(s) ?? false
                release(slot: s)
                if !kept { droppedFull[d] += 1 }
                advanceTail()
                if span == capacity { compact() }
                return true
            }
            p += 1
        }
        return false
    }

    /// Moves occupied slots together towards the head, oldest first, keeping their order.
    /// In-flight batches hold positions, not slots, only between `reserve` and `complete`,
    /// so compaction renumbers them through `relocate`.
    private func compact() {
        var write = head - 1
        var read = head - 1
        while read >= tail {
            let s = read % capacity
            if state[s] != SlotState.free.rawValue {
                if read != write { move(from: s, to: write % capacity) }
                write -= 1
            }
            read -= 1
        }
        tail = write + 1
    }

    private func move(from a: Int, to b: Int) {
        ds[b] = ds[a]; state[b] = state[a]; times[b] = times[a]; counts[b] = counts[a]
        (values + b * maxValues).update(from: values + a * maxValues, count: Int(counts[a]))
        state[a] = SlotState.free.rawValue
        relocate?(a, b)
    }

    /// Called when compaction moves an in-flight slot (the publisher updates its batch).
    public var relocate: ((_ from: Int, _ to: Int) -> Void)?

    /// Called with the slot a full ring is about to drop (the oldest waiting one). Returns true when
    /// the observation was accounted for elsewhere (spooled, or a failed spool write counted there),
    /// so it is not counted as dropped here.
    public var evict: ((_ slot: Int) -> Bool)?

    private func advanceTail() {
        while tail < head, state[tail % capacity] == SlotState.free.rawValue { tail += 1 }
        if tail == head { tail = 0; head = 0 }
    }

    private func release(slot s: Int) {
        state[s] = SlotState.free.rawValue
        perDatastream[Int(ds[s])] -= 1
        occupied -= 1
    }

    // MARK: Reading (the publisher)

    /// Marks up to `max` of `datastream`'s oldest waiting observations in flight and calls
    /// `body(slot, time, values)` for each, oldest first. Returns how many.
    @discardableResult
    public func reserve(datastream d: Int, max limit: Int, into batch: inout [Int]) -> Int {
        batch.removeAll(keepingCapacity: true)
        guard perDatastream[d] > 0 else { return 0 }
        var p = tail
        while p < head, batch.count < limit {
            let s = p % capacity
            if ds[s] == UInt16(d), state[s] == SlotState.live.rawValue {
                state[s] = SlotState.inFlight.rawValue
                batch.append(s)
            } else if ds[s] == UInt16(d), state[s] == SlotState.inFlight.rawValue {
                // One batch in flight per datastream: older observations are already being sent.
                break
            }
            p += 1
        }
        return batch.count
    }

    /// Live observations of `datastream` (not in flight) — whether a flush has anything to send.
    public func waiting(datastream d: Int) -> Bool {
        guard perDatastream[d] > 0 else { return false }
        var p = tail
        while p < head {
            let s = p % capacity
            if ds[s] == UInt16(d), state[s] == SlotState.live.rawValue { return true }
            p += 1
        }
        return false
    }

    public func time(ofSlot s: Int) -> Double { times[s] }
    public func values(ofSlot s: Int) -> UnsafeBufferPointer<Double> {
        UnsafeBufferPointer(start: values + s * maxValues, count: Int(counts[s]))
    }
    public func datastream(ofSlot s: Int) -> Int { Int(ds[s]) }
    public func state(ofSlot s: Int) -> SlotState { SlotState(rawValue: state[s]) ?? .free }

    /// The batch was delivered or given up: free its slots.
    public func complete(_ batch: [Int]) {
        for s in batch where state[s] == SlotState.inFlight.rawValue { release(slot: s) }
        advanceTail()
    }

    /// The batch must be sent again later: its observations wait again, still oldest of their datastream.
    public func requeue(_ batch: [Int]) {
        for s in batch where state[s] == SlotState.inFlight.rawValue { state[s] = SlotState.live.rawValue }
    }

    /// Hands every waiting observation to `body`, oldest first, and frees it (at shutdown during an
    /// outage, so the spool keeps what the ring would lose). In-flight ones stay. Returns how many.
    @discardableResult
    public func removeWaiting(_ body: (_ slot: Int) -> Void) -> Int {
        var n = 0
        var p = tail
        while p < head {
            let s = p % capacity
            if state[s] == SlotState.live.rawValue { body(s); release(slot: s); n += 1 }
            p += 1
        }
        advanceTail()
        return n
    }

    /// Drops everything of one datastream that is waiting (e.g. the output was disabled). Returns how many.
    @discardableResult
    public func discard(datastream d: Int) -> Int {
        var n = 0
        var p = tail
        while p < head {
            let s = p % capacity
            if ds[s] == UInt16(d), state[s] == SlotState.live.rawValue { release(slot: s); n += 1 }
            p += 1
        }
        advanceTail()
        return n
    }
}
