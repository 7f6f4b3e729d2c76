import OSHCore
import XCTest
import OSHSimulation

final class SimulatedSensorsTests: XCTestCase {
    func testEveryScalarOutputGetsPlausibleValuesInLeafOrder() throws {
        let sim = SimulatedSensors()
        for spec in OutputCatalogue.all(OutputOptions(uid: "urn:osh:rpi:10000000abcdef12")) where spec.binaryEncoding == nil {
            let v = sim.values(for: spec, at: 12.3)
            XCTAssertEqual(v.count, spec.leaves.count - 1, spec.outputName)
            XCTAssertTrue(v.allSatisfy { $0.isFinite }, spec.outputName)
        }
        let o = OutputOptions(uid: "urn:osh:rpi:10000000abcdef12")
        let q = sim.values(for: OutputCatalogue.quatOrientation(o), at: 5)
        XCTAssertEqual(q.map { $0 * $0 }.reduce(0, +), 1, accuracy: 1e-9, "unit quaternion")
        let e = sim.values(for: OutputCatalogue.eulerOrientation(o), at: 5)
        XCTAssertTrue((-180...180).contains(e[0]) && (-90...90).contains(e[1]) && (-180...180).contains(e[2]))
        let g = sim.values(for: OutputCatalogue.accelerometer(o), at: 5)
        XCTAssertEqual((g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).squareRoot(), 9.80665, accuracy: 0.1)
        let b0 = sim.values(for: OutputCatalogue.barometer(o), at: 0)
        XCTAssertEqual(b0[1], 0, accuracy: 1e-9, "relative altitude starts at 0")
        let a = sim.values(for: OutputCatalogue.audioLevel(o), at: 1)
        XCTAssertLessThanOrEqual(a[1], 0)
        XCTAssertGreaterThanOrEqual(a[1], a[0])
    }

    func testDeterministic() {
        let spec = OutputCatalogue.gps(OutputOptions(uid: "urn:osh:rpi:10000000abcdef12"))
        XCTAssertEqual(SimulatedSensors(seed: 7).values(for: spec, at: 3), SimulatedSensors(seed: 7).values(for: spec, at: 3))
    }
}
