import Foundation
import XCTest
import OSHCore
@testable import OSHDevNode

/// The node's store is bounded: a long soak keeps the newest observations, commands and status
/// reports per datastream / control stream, and counts what it evicted.
extension DevNodeTests {
    func testBoundedLogKeepsTheNewestAndCountsTheRest() {
        var log = BoundedLog<Int>(capacity: 3)
        for i in 0..<10 { log.append(i) }
        XCTAssertEqual(Array(log), [7, 8, 9])
        XCTAssertEqual(log.evicted, 7)
        XCTAssertEqual(log.last, 9)
        log.remove(at: 0)
        XCTAssertEqual(Array(log), [8, 9])
        XCTAssertEqual(log.evicted, 7, "a deletion is not an eviction")
        for i in 10..<1_000 { log.append(i) }
        XCTAssertEqual(Array(log), [997, 998, 999])
        XCTAssertEqual(log.evicted, 7 + 990 - 1)
        XCTAssertEqual(log.firstIndex(of: 998), 1)
    }

    func testObservationsAndStatusReportsAreCappedPerStream() throws {
        var config = DevNodeConfig(maxStoredObservations: 3)
        config.maxStoredCommands = 2
        let node = try startNode(config)
        let sys = try createSystem(node)
        let ds = try createDatastream(node, system: sys)
        for k in 0..<5 {
            let one = #"{"phenomenonTime":"2026-03-18T17:05:3\#(k)Z","result":{"temp":\#(k),"hum":40}}"#
            XCTAssertEqual(try post(node, "/datastreams/\(ds)/observations", "application/om+json", one).status, 201)
        }
        let s = try XCTUnwrap(node.stats.datastream(id: ds))
        XCTAssertEqual(s.observationCount, 5, "every accepted observation is counted")
        XCTAssertEqual(s.evictedObservations, 2)
        XCTAssertEqual(s.phenomenonTimes, [1_773_853_532, 1_773_853_533, 1_773_853_534])
        XCTAssertEqual(node.observations(datastreamID: ds).map { $0["/temp"] }, [.number(2), .number(3), .number(4)])
        let listed = try get(node, "/datastreams/\(ds)/observations")
        XCTAssertEqual(((listed.json as? [String: Any])?["items"] as? [Any])?.count, 3, listed.text)
        XCTAssertEqual(((try get(node, "/datastreams/\(ds)/stats").json as? [String: Any])?["count"] as? Int), 5)

        let body =
            #"{"name":"Pan","inputName":"ptz","schema":{"commandFormat":"application/json","parametersSchema":{"type":"DataRecord","name":"ptz","fields":[{"type":"Quantity","name":"rpan","uom":{"code":"deg"}}]}}}"#
        let cs = try XCTUnwrap(try post(node, "/systems/\(sys)/controlstreams", "application/json", body).locationID)
        for code in ["ACCEPTED", "EXECUTING", "COMPLETED"] {
            let status = #"{"command@id":"0abc","statusCode":"\#(code)"}"#
            XCTAssertEqual(try post(node, "/controlstreams/\(cs)/status", "application/json", status).status, 201)
        }
        let reports = try get(node, "/controlstreams/\(cs)/status")
        let codes = ((reports.json as? [String: Any])?["items"] as? [[String: Any]])?.map { $0["statusCode"] as? String }
        XCTAssertEqual(codes, ["EXECUTING", "COMPLETED"], reports.text)
        XCTAssertEqual(node.stats.evictedCommandStatuses, 1)
    }

    func testStoredCommandsAreCappedPerControlStream() {
        let hub = CommandHub()
        for k in 0..<5 {
            hub.store(
                StoredCommand(
                    id: "c\(k)", controlStreamID: k % 2 == 0 ? "even" : "odd", issueTime: Double(k),
                    sender: "anonymous", parameters: .null), cap: 2)
        }
        XCTAssertEqual(hub.commands("even").map(\.id), ["c2", "c4"])
        XCTAssertEqual(hub.commands("odd").map(\.id), ["c1", "c3"])
        XCTAssertEqual(hub.evicted, 1)
        hub.forget()
        XCTAssertEqual(hub.commands("even").count, 0)
    }
}
