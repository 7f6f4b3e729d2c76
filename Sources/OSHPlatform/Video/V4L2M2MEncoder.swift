// The Pi 4's hardware H.264 encoder (bcm2835-codec-encode, usually /dev/video11; or any
// multi-planar M2M H.264 encoder V4L2Probe.findEncoder finds) as a V4L2 memory-to-memory
// device: raw pictures queued on OUTPUT_MPLANE, access units dequeued from CAPTURE_MPLANE
// when the poll fd is readable. IDR period and inline SPS/PPS set by control,
// so every key frame stands alone. Input: the camera's buffer imported as a DMABUF when the
// camera exports one and its layout is the encoder's (no copy at all), else one copy into
// the encoder's own mmap'd input buffer. A frame offered while every input buffer is with
// the encoder is dropped and counted.

import CV4L2
import OSHCore
#if canImport(Glibc)
import Glibc
#endif

public struct M2MCounters: Sendable, Equatable {
    public var submitted = 0
    public var encoded = 0
    /// No free input buffer: the encoder is still busy with earlier frames.
    public var droppedBusy = 0
    public var bytes = 0
}

public final class V4L2M2MEncoder {
    public let path: String
    public let input: PixelFormat
    public let width: Int
    public let height: Int
    public var onAccessUnit: ((EncodedFrame) -> Void)?
    /// The encoder failed or vanished; the owner falls back (to libx264).
    public var onFailure: ((V4L2Error) -> Void)?
    /// DMABUF mode: the encoder has finished reading this camera buffer (give it back to the camera).
    public var onInputReleased: ((_ bufferIndex: Int) -> Void)?
    /// Pictures are imported from the camera's DMABUFs (no copy) instead of copied in.
    public private(set) var importsDMABUF = false
    public private(set) var counters = M2MCounters()

    private let loop: EventLoop
    private let device: V4L2Device
    private var fd: Int32 = -1
    private var registration: EventLoop.Registration?
    private var inputs: [(address: UnsafeMutableRawPointer?, length: Int, free: Bool)] = []
    /// DMABUF mode: which camera buffer each input slot holds.
    private var importedIndex: [Int] = []
    private var outputs: [(address: UnsafeMutableRawPointer, length: Int)] = []
    /// The one v4l2_plane every multi-planar QBUF/DQBUF points at (allocated once).
    private let plane = UnsafeMutablePointer<v4l2_plane>.allocate(capacity: 1)
    private let inputBytesPerLine: Int
    private var encoderBytesPerLine = 0
    /// Rows of the luma plane in the encoder's buffer (the height, rounded up by some drivers).
    private var encoderLumaRows = 0

    static let outputType = V4L2_BUF_TYPE_VIDEO_OUTPUT_MPLANE.rawValue  // raw in
    static let captureType = V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue  // H.264 out

    /// A progressive one-plane format request for either side (the driver fills in the rest).
    static func singlePlaneFormat(_ type: UInt32, width: Int, height: Int, fourCC: FourCC) -> v4l2_format {
        var f = v4l2_format()
        f.type = type
        f.fmt.pix_mp.width = UInt32(width)
        f.fmt.pix_mp.height = UInt32(height)
        f.fmt.pix_mp.pixelformat = fourCC.rawValue
        f.fmt.pix_mp.field = V4L2_FIELD_NONE.rawValue
        f.fmt.pix_mp.num_planes = 1
        return f
    }

    /// Opens and configures the encoder for pictures of `input` layout; throws what failed.
    /// `dmabufSlots` > 0 asks for DMABUF import with that many pictures in the encoder at once
    /// (used only if the layouts match; check `importsDMABUF`).
    public init(
        loop: EventLoop, device: V4L2Device, path: String, input: PixelFormat, width: Int, height: Int,
        bytesPerLine: Int, settings: VideoSettings, buffers: Int = 2, dmabufSlots: Int = 0
    ) throws {
        guard input != .h264 else { throw V4L2Error("the hardware encoder takes raw pictures, not H.264", errno: EINVAL) }
        self.loop = loop
        self.device = device
        self.path = path
        self.input = input
        self.width = width
        self.height = height
        self.inputBytesPerLine = bytesPerLine
        plane.initialize(to: v4l2_plane())
        switch device.open(path) {
        case .success(let f): fd = f
        case .failure(let e): throw V4L2Error("cannot open the hardware encoder \(path): \(e)", errno: e.errno)
        }
        do {
            try configure(settings, buffers: buffers, dmabufSlots: dmabufSlots)
        } catch {
            shutdown()
            throw error
        }
    }

    deinit {
        shutdown()
        plane.deallocate()
    }

    /// The control value for an H.264 level given as level × 10 (40 = 4.0); nil if unknown.
    public static func levelControl(_ level: Int) -> Int32? {
        let order = [10, 9, 11, 12, 13, 20, 21, 22, 30, 31, 32, 40, 41, 42, 50, 51]  // V4L2 enum order; 9 = 1b
        return order.firstIndex(of: level).map { Int32($0) }
    }

    private func configure(_ s: VideoSettings, buffers: Int, dmabufSlots: Int) throws {
        var cap = v4l2_capability()
        var e = device.call(fd, .querycap, &cap)
        guard e == 0 else { throw V4L2Error.call(.querycap, path, e) }
        guard cap.nodeCaps & UInt32(truncatingIfNeeded: V4L2_CAP_VIDEO_M2M_MPLANE) != 0 else {
            throw V4L2Error("\(path) (\(V4L2Text.string(cap.card))) is not a multi-planar memory-to-memory device", errno: ENOTTY)
        }

        // Raw side first: the capture side's size follows it on this driver.
        var f = Self.singlePlaneFormat(Self.outputType, width: width, height: height, fourCC: input.fourCC)
        f.fmt.pix_mp.plane_fmt.0.bytesperline = UInt32(inputBytesPerLine)
        e = device.call(fd, .sFmt, &f)
        guard e == 0 else { throw V4L2Error.call(.sFmt, path, e, hint: "the encoder refused \(input.fourCC) \(width)x\(height)") }
        guard f.fmt.pix_mp.pixelformat == input.fourCC.rawValue, Int(f.fmt.pix_mp.width) == width, Int(f.fmt.pix_mp.height) == height else {
            throw V4L2Error(
                "the hardware encoder answered \(input.fourCC) \(width)x\(height) with \(FourCC(rawValue: f.fmt.pix_mp.pixelformat)) \(f.fmt.pix_mp.width)x\(f.fmt.pix_mp.height)",
                errno: EINVAL)
        }
        // The driver may pad lines (and the luma height) for its hardware; the copy follows its layout.
        encoderBytesPerLine = max(Int(f.fmt.pix_mp.plane_fmt.0.bytesperline), input == .yuyv ? width * 2 : width)
        let sizeImage = Int(f.fmt.pix_mp.plane_fmt.0.sizeimage)
        encoderLumaRows = input == .yuyv ? height : max(height, sizeImage * 2 / 3 / max(1, encoderBytesPerLine))

        var c = Self.singlePlaneFormat(Self.captureType, width: width, height: height, fourCC: .h264)
        // Room for an IDR at a high bitrate: 1 MiB up to 720p, 2 MiB above.
        c.fmt.pix_mp.plane_fmt.0.sizeimage = UInt32(width * height > 1280 * 720 ? 2 << 20 : 1 << 20)
        e = device.call(fd, .sFmt, &c)
        guard e == 0, c.fmt.pix_mp.pixelformat == FourCC.h264.rawValue else {
            throw V4L2Error.call(.sFmt, path, e == 0 ? EINVAL : e, hint: "the encoder does not output H264")
        }

        var parm = v4l2_streamparm()
        parm.type = Self.outputType
        parm.parm.output.timeperframe = v4l2_fract(numerator: 1000, denominator: UInt32((s.fps * 1000).rounded()))
        _ = device.call(fd, .sParm, &parm)  // only a rate-control hint for this driver

        // The two that make every key frame decodable on its own are required; bitrate and
        // level are best effort (older firmware refuses some levels).
        try control(OSH_V4L2_CID_MPEG_VIDEO_H264_I_PERIOD, Int32(max(1, s.keyFrameInterval)), "H264_I_PERIOD", required: true)
        try control(OSH_V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER, 1, "REPEAT_SEQ_HEADER", required: true)
        try control(OSH_V4L2_CID_MPEG_VIDEO_BITRATE, Int32(clamping: s.bitrateKbps * 1000), "BITRATE", required: false)
        if let level = Self.levelControl(s.level) {
            try control(OSH_V4L2_CID_MPEG_VIDEO_H264_LEVEL, level, "H264_LEVEL", required: false)
        }

        // Zero copy needs the camera's picture to be laid out exactly as the encoder reads it.
        importsDMABUF = dmabufSlots > 0 && encoderBytesPerLine == inputBytesPerLine && encoderLumaRows == height
        if importsDMABUF {
            var r = v4l2_requestbuffers()
            r.count = UInt32(dmabufSlots)
            r.type = Self.outputType
            r.memory = V4L2_MEMORY_DMABUF.rawValue
            e = device.call(fd, .reqbufs, &r)
            if e == 0 && r.count > 0 {
                inputs = Array(repeating: (nil, 0, true), count: Int(r.count))
                importedIndex = Array(repeating: -1, count: Int(r.count))
            } else {
                importsDMABUF = false
            }
        }
        if !importsDMABUF {
            try requestBuffers(type: Self.outputType, count: buffers) { addr, len in self.inputs.append((addr, len, true)) }
        }
        try requestBuffers(type: Self.captureType, count: buffers) { addr, len in self.outputs.append((addr, len)) }
        for i in outputs.indices { try queueCapture(i) }
        for type in [Self.outputType, Self.captureType] {
            var t = Int32(bitPattern: type)
            e = device.call(fd, .streamon, &t)
            guard e == 0 else { throw V4L2Error.call(.streamon, path, e) }
        }
        do {
            registration = try loop.add(fd: device.pollFD(fd), events: .readable) { [weak self] ev in self?.readable(ev) }
        } catch {
            throw V4L2Error("hardware encoder \(path): cannot watch it on the event loop: \(error)", errno: EIO)
        }
    }

    private func control(_ id: UInt32, _ value: Int32, _ name: String, required: Bool) throws {
        var c = v4l2_control(id: id, value: value)
        let e = device.call(fd, .sCtrl, &c)
        guard e != 0 else { return }
        let err = V4L2Error.call(.sCtrl, path, e, hint: "control \(name)=\(value)")
        if required { throw err }
        Log.warning("\(err); continuing with the encoder's default")
    }

    private func requestBuffers(type: UInt32, count: Int, _ mapped: (UnsafeMutableRawPointer, Int) -> Void) throws {
        var r = v4l2_requestbuffers()
        r.count = UInt32(count)
        r.type = type
        r.memory = V4L2_MEMORY_MMAP.rawValue
        var e = device.call(fd, .reqbufs, &r)
        guard e == 0, r.count > 0 else { throw V4L2Error.call(.reqbufs, path, e == 0 ? ENOMEM : e) }
        for i in 0..<Int(r.count) {
            var b = buffer(type: type, index: i)
            e = device.call(fd, .querybuf, &b)
            guard e == 0 else { throw V4L2Error.call(.querybuf, path, e) }
            let length = Int(plane.pointee.length)
            switch device.mmap(fd, length: length, offset: Int(plane.pointee.m.mem_offset)) {
            case .success(let p): mapped(p, length)
            case .failure(let err): throw V4L2Error("hardware encoder \(path): cannot map buffer \(i): \(err)", errno: err.errno)
            }
        }
    }

    private func buffer(type: UInt32, index: Int) -> v4l2_buffer {
        plane.pointee = v4l2_plane()
        var b = v4l2_buffer()
        b.index = UInt32(index)
        b.type = type
        b.memory = V4L2_MEMORY_MMAP.rawValue
        b.length = 1
        b.m.planes = plane
        return b
    }

    private func queueCapture(_ i: Int) throws {
        var b = buffer(type: Self.captureType, index: i)
        plane.pointee.length = UInt32(outputs[i].length)
        let e = device.call(fd, .qbuf, &b)
        guard e == 0 else { throw V4L2Error.call(.qbuf, path, e) }
    }

    /// Queues one picture. False when it was dropped: every input buffer is still with the
    /// encoder, the picture has the wrong shape, or the encoder has failed.
    @discardableResult
    public func submit(_ frame: VideoFrame) -> Bool {
        counters.submitted += 1
        guard fd >= 0, frame.format == input, frame.width == width, frame.height == height,
            let src = frame.bytes.baseAddress
        else { return false }
        guard let i = inputs.firstIndex(where: { $0.free }) else { counters.droppedBusy += 1; return false }
        guard frame.isComplete else { return false }
        if importsDMABUF { return submitImported(frame, slot: i) }
        guard let address = inputs[i].address else { return false }
        // The one copy: the camera's buffer into the encoder's.
        let n = copyPicture(from: src, bytesPerLine: frame.bytesPerLine, into: address, capacity: inputs[i].length)
        guard n > 0 else { return false }
        var b = buffer(type: Self.outputType, index: i)
        plane.pointee.bytesused = UInt32(n)
        plane.pointee.length = UInt32(inputs[i].length)
        // The driver copies this onto the access unit, which is how the frame keeps its time.
        let us = Int((frame.monotonicTime * 1e6).rounded())
        // (Field types differ between 64-bit and 32-bit time_t ABIs, hence the conversions.)
        b.timestamp.tv_sec = .init(us / 1_000_000)
        b.timestamp.tv_usec = .init(us % 1_000_000)
        let e = device.call(fd, .qbuf, &b)
        guard e == 0 else { fail(V4L2Error.call(.qbuf, path, e)); return false }
        inputs[i].free = false
        return true
    }

    /// DMABUF mode: the encoder reads the camera's buffer itself. True = the caller must keep
    /// that buffer until `onInputReleased` names it.
    private func submitImported(_ frame: VideoFrame, slot i: Int) -> Bool {
        guard frame.dmabufFD >= 0, frame.bufferIndex >= 0 else { return false }
        var b = v4l2_buffer()
        plane.pointee = v4l2_plane()
        b.index = UInt32(i)
        b.type = Self.outputType
        b.memory = V4L2_MEMORY_DMABUF.rawValue
        b.length = 1
        b.m.planes = plane
        plane.pointee.m.fd = frame.dmabufFD
        plane.pointee.bytesused = UInt32(frame.bytes.count)
        plane.pointee.length = UInt32(frame.bytes.count)
        let us = Int((frame.monotonicTime * 1e6).rounded())
        b.timestamp.tv_sec = .init(us / 1_000_000)
        b.timestamp.tv_usec = .init(us % 1_000_000)
        let e = device.call(fd, .qbuf, &b)
        guard e == 0 else {
            // Typically a camera buffer the codec cannot address (not physically contiguous, as
            // uvcvideo's vmalloc buffers): copy from now on instead of losing the hardware encoder.
            Log.notice(
                "hardware encoder \(path) cannot import the camera's DMABUF (\(V4L2Error.call(.qbuf, path, e))); copying each frame instead"
            )
            guard switchToCopying() else { return false }
            return submit(frame)
        }
        inputs[i].free = false
        importedIndex[i] = frame.bufferIndex
        return true
    }

    /// Replaces the DMABUF input queue with mmap'd buffers of the encoder's own.
    private func switchToCopying() -> Bool {
        importsDMABUF = false
        var t = Int32(bitPattern: Self.outputType)
        _ = device.call(fd, .streamoff, &t)
        for (i, c) in importedIndex.enumerated() where c >= 0 {
            importedIndex[i] = -1
            onInputReleased?(c)
        }
        importedIndex.removeAll()
        inputs.removeAll()
        var r = v4l2_requestbuffers()
        r.type = Self.outputType
        r.memory = V4L2_MEMORY_DMABUF.rawValue
        _ = device.call(fd, .reqbufs, &r)
        do {
            try requestBuffers(type: Self.outputType, count: 2) { addr, len in self.inputs.append((addr, len, true)) }
            let e = device.call(fd, .streamon, &t)
            guard e == 0 else { throw V4L2Error.call(.streamon, path, e) }
            return true
        } catch let err as V4L2Error {
            fail(err)
        } catch {
            fail(V4L2Error("hardware encoder \(path): \(error)", errno: EIO))
        }
        return false
    }

    /// Copies a picture into the encoder's layout: one memcpy when the layouts match, line by
    /// line otherwise. Returns the bytes used.
    private func copyPicture(from src: UnsafeRawPointer, bytesPerLine sbpl: Int, into dst: UnsafeMutableRawPointer, capacity: Int) -> Int {
        let dbpl = encoderBytesPerLine, rows = encoderLumaRows
        let total = input == .yuyv ? dbpl * height : dbpl * rows + 2 * (dbpl / 2) * (rows / 2)
        guard total <= capacity else { return 0 }
        if sbpl == dbpl && rows == height {
            dst.copyMemory(from: src, byteCount: total)
            return total
        }
        func plane(_ s: UnsafeRawPointer, _ sStride: Int, _ d: UnsafeMutableRawPointer, _ dStride: Int, lines: Int, bytes: Int) {
            for l in 0..<lines { (d + l * dStride).copyMemory(from: s + l * sStride, byteCount: bytes) }
        }
        switch input {
        case .yuyv:
            plane(src, sbpl, dst, dbpl, lines: height, bytes: width * 2)
        case .nv12:
            plane(src, sbpl, dst, dbpl, lines: height, bytes: width)
            plane(src + sbpl * height, sbpl, dst + dbpl * rows, dbpl, lines: height / 2, bytes: width)
        case .i420:
            plane(src, sbpl, dst, dbpl, lines: height, bytes: width)
            let su = src + sbpl * height, du = dst + dbpl * rows
            plane(su, sbpl / 2, du, dbpl / 2, lines: height / 2, bytes: width / 2)
            plane(su + (sbpl / 2) * (height / 2), sbpl / 2, du + (dbpl / 2) * (rows / 2), dbpl / 2, lines: height / 2, bytes: width / 2)
        case .h264, .mjpeg, .rgb24, .bgr24:
            return 0  // decoded before the encoder: never an encoder's input
        }
        return total
    }

    /// Watched for readable only (an access unit is ready). Finished input buffers (which the
    /// kernel signals as writable) are collected on the same wake-up: the encoder has always
    /// consumed a picture by the time its access unit is ready.
    private func readable(_ events: EventLoop.Events) {
        // Input buffers the encoder has finished with.
        while fd >= 0 {
            var b = buffer(type: Self.outputType, index: 0)
            if importsDMABUF { b.memory = V4L2_MEMORY_DMABUF.rawValue }
            let e = device.call(fd, .dqbuf, &b)
            if e == EAGAIN { break }
            guard e == 0 else { return fail(V4L2Error.call(.dqbuf, path, e)) }
            let i = Int(b.index)
            guard i < inputs.count else { continue }
            inputs[i].free = true
            if importsDMABUF && importedIndex[i] >= 0 {
                let cameraBuffer = importedIndex[i]
                importedIndex[i] = -1
                onInputReleased?(cameraBuffer)
            }
        }
        // Access units.
        while fd >= 0 {
            var b = buffer(type: Self.captureType, index: 0)
            let e = device.call(fd, .dqbuf, &b)
            if e == EAGAIN { break }
            guard e == 0 else { return fail(V4L2Error.call(.dqbuf, path, e)) }
            let i = Int(b.index)
            guard i < outputs.count else { continue }
            let offset = min(Int(plane.pointee.data_offset), outputs[i].length)
            let used = min(Int(plane.pointee.bytesused), outputs[i].length) - offset
            if used > 0 && b.flags & UInt32(truncatingIfNeeded: V4L2_BUF_FLAG_ERROR) == 0 {
                counters.encoded += 1
                counters.bytes += used
                let t = Double(b.timestamp.tv_sec) + Double(b.timestamp.tv_usec) / 1e6
                onAccessUnit?(
                    EncodedFrame(
                        monotonicTime: t,
                        bytes: UnsafeRawBufferPointer(start: outputs[i].address + offset, count: used),
                        isKeyFrame: b.flags & UInt32(truncatingIfNeeded: V4L2_BUF_FLAG_KEYFRAME) != 0))
            }
            guard fd >= 0 else { return }
            do { try queueCapture(i) } catch let err as V4L2Error { return fail(err) } catch { return }
        }
    }

    private func fail(_ e: V4L2Error) {
        Log.error("hardware encoder \(path): \(e)")
        shutdown()
        onFailure?(e)
    }

    /// Stops streaming, unmaps and closes. Idempotent.
    public func shutdown() {
        if let r = registration { loop.remove(r) }
        registration = nil
        if fd >= 0 {
            for type in [Self.outputType, Self.captureType] {
                var t = Int32(bitPattern: type)
                _ = device.call(fd, .streamoff, &t)
            }
        }
        for b in inputs { if let a = b.address { device.munmap(a, length: b.length) } }
        // Camera buffers still inside the encoder go back to the camera.
        for (i, c) in importedIndex.enumerated() where c >= 0 {
            importedIndex[i] = -1
            onInputReleased?(c)
        }
        for b in outputs { device.munmap(b.address, length: b.length) }
        inputs.removeAll()
        outputs.removeAll()
        if fd >= 0 { device.close(fd) }
        fd = -1
    }
}
