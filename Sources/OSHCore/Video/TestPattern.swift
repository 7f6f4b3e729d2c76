// A deterministic I420 test picture for the demo and the benchmark: eight colour bars that
// move one step per frame, a frame counter drawn as 16 black/white blocks (bit 15 first) on
// the top rows, and a luma ramp at the bottom. Same frame number → same bytes, everywhere.

public final class TestPatternGenerator {
    public let width: Int
    public let height: Int
    /// The picture: Y (width×height), then U, then V (each width/2 × height/2). Reused every frame.
    public let pixels: UnsafeMutablePointer<UInt8>
    public var buffer: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: pixels, count: frameBytes) }
    public let frameBytes: Int
    public private(set) var frameNumber = 0

    /// (Y, U, V) of the 75 % colour bars: white, yellow, cyan, green, magenta, red, blue, black.
    private static let bars: [(UInt8, UInt8, UInt8)] = [
        (180, 128, 128), (162, 44, 142), (131, 156, 44), (112, 72, 58),
        (84, 184, 198), (65, 100, 212), (35, 212, 114), (16, 128, 128),
    ]

    /// `width` and `height` are rounded down to even numbers (at least 16).
    public init(width: Int, height: Int) {
        self.width = max(16, width & ~1)
        self.height = max(16, height & ~1)
        frameBytes = PixelFormat.i420.frameBytes(width: self.width, height: self.height)
        pixels = UnsafeMutablePointer<UInt8>.allocate(capacity: frameBytes)
        pixels.initialize(repeating: 16, count: frameBytes)
    }

    deinit { pixels.deallocate() }

    public var lumaStride: Int { width }
    public var chromaStride: Int { width / 2 }

    /// Draws frame `number` into `buffer` (no allocation) and remembers it as `frameNumber`.
    public func render(frame number: Int) {
        frameNumber = number
        let w = width, h = height, cw = w / 2, ch = h / 2
        let y = pixels
        let u = y + w * h
        let v = u + cw * ch
        let bars = TestPatternGenerator.bars
        let shift = (number * 4) % w
        let rampTop = h - h / 8
        let blockW = max(1, w / 16), blockH = max(2, h / 12) & ~1
        for row in 0..<h {
            let line = y + row * w
            if row >= rampTop {
                for col in 0..<w { line[col] = UInt8(16 + (219 * col) / max(1, w - 1)) }
            } else if row < blockH {
                for col in 0..<w {
                    let bit = min(15, col / blockW)
                    line[col] = (number >> (15 - bit)) & 1 == 1 ? 235 : 16
                }
            } else {
                for col in 0..<w { line[col] = bars[(((col + shift) % w) * 8) / w].0 }
            }
        }
        for row in 0..<ch {
            let lu = u + row * cw, lv = v + row * cw
            let lumaRow = row * 2
            let neutral = lumaRow >= rampTop || lumaRow < blockH
            for col in 0..<cw {
                if neutral {
                    lu[col] = 128; lv[col] = 128
                } else {
                    let b = bars[((((col * 2) + shift) % w) * 8) / w]
                    lu[col] = b.1; lv[col] = b.2
                }
            }
        }
    }

    /// Reads the counter back from a rendered I420 luma plane (tests: the frame survived the trip).
    public static func readCounter(luma: UnsafeRawBufferPointer, width: Int, height: Int) -> Int {
        let blockW = max(1, width / 16), blockH = max(2, height / 12) & ~1
        var n = 0
        let row = blockH / 2
        for bit in 0..<16 {
            let px = luma[row * width + bit * blockW + blockW / 2]
            n = (n << 1) | (px > 125 ? 1 : 0)
        }
        return n
    }
}
