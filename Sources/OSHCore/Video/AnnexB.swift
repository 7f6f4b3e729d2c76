// H.264 Annex-B byte streams: NAL units separated by 00 00 01 or 00 00 00 01 start codes.
// The scanner does not allocate (forEach); it is how tests and the encoder path check that a
// key-frame access unit carries SPS + PPS + IDR, so a viewer can start decoding at it.

public enum AnnexB {
    public enum NALType {
        public static let nonIDRSlice: UInt8 = 1
        public static let idrSlice: UInt8 = 5
        public static let sei: UInt8 = 6
        public static let sps: UInt8 = 7
        public static let pps: UInt8 = 8
        public static let accessUnitDelimiter: UInt8 = 9
    }

    /// One NAL unit: where its header byte is and how many bytes it has (header included,
    /// trailing zero bytes of the next start code excluded).
    public struct NALUnit: Equatable, Sendable {
        public var offset: Int
        public var length: Int
        /// nal_unit_type, the low 5 bits of the header byte.
        public var type: UInt8
        /// Length of the start code in front of it (3 or 4).
        public var startCodeLength: Int
    }

    /// Calls `body` for each NAL unit in order. Bytes before the first start code are skipped.
    public static func forEach(in buf: UnsafeRawBufferPointer, _ body: (NALUnit) -> Void) {
        let n = buf.count
        var i = 0
        var current: (start: Int, sc: Int)?
        while i + 2 < n {
            if buf[i] == 0 && buf[i + 1] == 0 && buf[i + 2] == 1 {
                let sc = (i > 0 && buf[i - 1] == 0) ? 4 : 3
                let scStart = i - (sc - 3)
                if let c = current { emit(buf, c.start, end: scStart, sc: c.sc, body) }
                current = (i + 3, sc)
                i += 3
            } else {
                i += 1
            }
        }
        if let c = current { emit(buf, c.start, end: n, sc: c.sc, body) }
    }

    private static func emit(_ buf: UnsafeRawBufferPointer, _ start: Int, end: Int, sc: Int, _ body: (NALUnit) -> Void) {
        var e = end
        // trailing_zero_8bits belong to the stream, not the NAL.
        while e > start && buf[e - 1] == 0 { e -= 1 }
        guard e > start else { return }
        body(NALUnit(offset: start, length: e - start, type: buf[start] & 0x1f, startCodeLength: sc))
    }

    /// All NAL units (allocates; for tests and diagnostics).
    public static func units(in buf: UnsafeRawBufferPointer) -> [NALUnit] {
        var out: [NALUnit] = []
        forEach(in: buf) { out.append($0) }
        return out
    }

    public static func units(in bytes: [UInt8]) -> [NALUnit] {
        bytes.withUnsafeBytes { units(in: $0) }
    }

    /// What an access unit holds, without allocating.
    public struct Summary: Equatable, Sendable {
        public var nalCount = 0
        public var hasSPS = false
        public var hasPPS = false
        public var hasIDR = false
        /// SPS and PPS both come before the first slice (what a decoder joining here needs).
        public var parameterSetsBeforeFirstSlice = false
        /// The first three NAL types are exactly SPS, PPS, IDR (libx264 with repeat-headers and no SEI).
        public var startsWithSPSPPSIDR = false
        /// A key frame a viewer can start from: SPS and PPS before an IDR slice.
        public var isSelfContainedKeyFrame: Bool { hasIDR && parameterSetsBeforeFirstSlice }
    }

    public static func summarize(_ buf: UnsafeRawBufferPointer) -> Summary {
        var s = Summary()
        var sawSlice = false
        var first: (UInt8, UInt8, UInt8) = (0, 0, 0)
        forEach(in: buf) { nal in
            switch s.nalCount {
            case 0: first.0 = nal.type
            case 1: first.1 = nal.type
            case 2: first.2 = nal.type
            default: break
            }
            s.nalCount += 1
            switch nal.type {
            case NALType.sps: s.hasSPS = true
            case NALType.pps: s.hasPPS = true
            case NALType.idrSlice, NALType.nonIDRSlice:
                if nal.type == NALType.idrSlice { s.hasIDR = true }
                if !sawSlice { s.parameterSetsBeforeFirstSlice = s.hasSPS && s.hasPPS }
                sawSlice = true
            default: break
            }
        }
        s.startsWithSPSPPSIDR = s.nalCount >= 3 && first == (NALType.sps, NALType.pps, NALType.idrSlice)
        return s
    }
}
