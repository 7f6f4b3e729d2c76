// A camera's own H.264 (a UVC camera with an H.264 format) as camera0_H264 sends it: every key
// frame self-contained, SPS + PPS + IDR, so a viewer can start at any key frame. Many UVC
// cameras send the parameter sets once, at the start of the stream, or only now and then:
// the newest SPS and PPS are kept and put in front of a key frame that lacks them. Until the
// first key frame after a (re)start nothing is passed on — a P-frame with no picture before it
// decodes to nothing — and each such frame is counted.

public struct CameraH264Framing {
    public struct Counters: Sendable, Equatable {
        /// Frames before the first key frame of a stream (not decodable; not sent).
        public var droppedBeforeKeyFrame = 0
        /// Key frames that came without SPS/PPS and were sent with the kept ones.
        public var headersAdded = 0
        /// Key frames without SPS/PPS before any were seen (not decodable; not sent).
        public var droppedWithoutHeaders = 0
        /// Key frames seen, and the frames between the last two (the camera's own cadence).
        public var keyFrames = 0
        public var lastKeyFrameInterval = 0
    }

    public private(set) var counters = Counters()
    private var sps: [UInt8] = []
    private var pps: [UInt8] = []
    private var started = false
    private var sinceKey = 0
    /// Where a repaired key frame is assembled; grows to the largest one, then is reused.
    private var scratch: [UInt8] = []

    public init() {
        sps.reserveCapacity(64)
        pps.reserveCapacity(64)
    }

    /// The stream starts again (the camera was reopened): wait for its next key frame.
    public mutating func restart() {
        started = false
        sinceKey = 0
    }

    /// What to send for one access unit from the camera: the bytes (the camera's own, or the
    /// repaired key frame, valid until the next call) and whether it is a key frame; nil when
    /// the frame is held back.
    public mutating func frame<R>(
        _ au: UnsafeRawBufferPointer, _ send: (UnsafeRawBufferPointer, Bool) -> R
    ) -> R? {
        var hasIDR = false
        var spsRange: Range<Int>?
        var ppsRange: Range<Int>?
        var firstSlice: Int?
        AnnexB.forEach(in: au) { nal in
            let whole = (nal.offset - nal.startCodeLength)..<(nal.offset + nal.length)
            switch nal.type {
            case AnnexB.NALType.sps: spsRange = whole
            case AnnexB.NALType.pps: ppsRange = whole
            case AnnexB.NALType.idrSlice, AnnexB.NALType.nonIDRSlice:
                if firstSlice == nil { firstSlice = whole.lowerBound }
                if nal.type == AnnexB.NALType.idrSlice { hasIDR = true }
            default: break
            }
        }
        if let r = spsRange { Self.keep(au, r, into: &sps) }
        if let r = ppsRange { Self.keep(au, r, into: &pps) }
        sinceKey += 1
        guard hasIDR else {
            guard started else {
                counters.droppedBeforeKeyFrame += 1
                return nil
            }
            return send(au, false)
        }
        counters.keyFrames += 1
        counters.lastKeyFrameInterval = sinceKey
        sinceKey = 0
        let selfContained =
            spsRange.map { $0.lowerBound < (firstSlice ?? Int.max) } == true
            && ppsRange.map { $0.lowerBound < (firstSlice ?? Int.max) } == true
        if selfContained {
            started = true
            return send(au, true)
        }
        guard !sps.isEmpty, !pps.isEmpty else {
            counters.droppedWithoutHeaders += 1
            return nil
        }
        started = true
        counters.headersAdded += 1
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: sps)
        scratch.append(contentsOf: pps)
        scratch.append(contentsOf: au)
        return scratch.withUnsafeBytes { send($0, true) }
    }

    private static func keep(_ au: UnsafeRawBufferPointer, _ r: Range<Int>, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        // Always a 4-byte start code, whatever the camera used.
        if au[r.lowerBound + 2] == 1 { out.append(0) }
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: au[r]))
    }
}
