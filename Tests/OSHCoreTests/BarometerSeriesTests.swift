import OSHCore
import XCTest

/// The barometer session's rules without a chip: what becomes a sample, a skip or a failure.
final class BarometerSeriesTests: XCTestCase {
    private func reading(_ hPa: Double) -> BarometerReading { BarometerReading(pressureHPa: hPa, celsius: 20) }

    func testEmptyReadsAreToleratedThenFail() {
        var series = BarometerSeries()
        for _ in 0..<BarometerSeries.emptyReadsTolerated { XCTAssertEqual(series.take(nil), .skip) }
        let n = BarometerSeries.emptyReadsTolerated
        XCTAssertEqual(series.take(nil), .failure(emptyReads: n + 1))
        XCTAssertEqual(series.take(nil), .failure(emptyReads: n + 2), "it keeps failing until a conversion arrives")
        XCTAssertEqual(series.take(reading(1000)), .sample(BarometerSample(pressure: 1000, relativeAltitude: 0)))
        XCTAssertEqual(series.take(nil), .skip, "a conversion starts the count again")
    }

    func testAltitudeIsRelativeToTheFirstGoodSampleAcrossAFailure() {
        var series = BarometerSeries()
        XCTAssertEqual(series.take(nil), .skip)
        XCTAssertEqual(series.take(reading(1000)), .sample(BarometerSample(pressure: 1000, relativeAltitude: 0)))
        for _ in 0...BarometerSeries.emptyReadsTolerated { _ = series.take(nil) }
        guard case .sample(let s) = series.take(reading(999)) else { return XCTFail("no sample after the failure") }
        XCTAssertEqual(s.pressure, 999)
        XCTAssertEqual(s.relativeAltitude, 8.42, accuracy: 0.01, "the reference survives the failure")
    }

    func testNonFiniteAndImplausiblePressuresAreSkipped() {
        var series = BarometerSeries()
        XCTAssertEqual(series.take(reading(.nan)).isImplausible, true)
        XCTAssertEqual(series.take(reading(.infinity)), .implausible(hPa: .infinity))
        XCTAssertEqual(series.take(reading(0)), .implausible(hPa: 0), "a skipped measurement is not the reference")
        XCTAssertNil(series.altitude.referenceAltitude)
        XCTAssertEqual(series.take(reading(1000)), .sample(BarometerSample(pressure: 1000, relativeAltitude: 0)))
        XCTAssertEqual(series.take(reading(.nan)).isImplausible, true)
    }
}

extension BarometerSeries.Verdict {
    /// NaN is not equal to itself: the case is what matters.
    var isImplausible: Bool { if case .implausible = self { return true } else { return false } }
}
