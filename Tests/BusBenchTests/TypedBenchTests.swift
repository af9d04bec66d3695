import BusBench
import Foundation
import NotificationBus
import Testing

@Suite("nbus bench throughput --typed", .timeLimit(.minutes(2)))
struct TypedBenchTests {
    @Test("The byte baseline sends the very JSON the typed path makes (same body, same size)")
    func handBuiltJSONIsTheEncoding() throws {
        for id in [0, 1, 42, -7, 1_000_001] {
            #expect(BenchOrder.handBuiltJSON(id: id) == (try BenchOrder.encodeBusPayload(BenchOrder(id: id))))
        }
    }

    @Test("BenchOrder's field coding (the broker runs' typed side) and its Codable coding (--codable) agree")
    func bothCodingsAgree() throws {
        for id in [0, 1, 42, -7, 1_000_001] {
            let order = BenchOrder(id: id)
            let fields = try BenchOrder.encodeBusPayload(order)
            let codable = try BusJSON.encode(order)
            #expect(fields == codable)
            #expect(try BenchOrder.decodeBusPayload(codable) == order)
            #expect(try BusJSON.decode(BenchOrder.self, from: fields) == order)
        }
    }

    @Test("In one process: every run delivers all it posts, and the typed runs code nothing")
    func inProcessRun() async throws {
        var options = ThroughputOptions(workerCommand: [])
        options.count = 2_000
        options.runs = 2
        let report = try await TypedInProcessBenchmark.run(options)
        #expect(report.accountingErrors.isEmpty, "\(report.accountingErrors)")
        #expect(report.typed.count == 2 && report.bytes.count == 2 && report.foundationObserver.count == 2)
        #expect(report.typedEncoded == [0, 0] && report.typedDecoded == [0, 0])
        #expect(report.typed.allSatisfy { $0.delivered == 2_000 } && report.foundationSequence.count == 2)
        #expect(report.foundationRate == max(report.foundationObserverRate, report.foundationSequenceRate))
        #expect(report.table().contains("ratio bus typed/Foundation's faster (\(report.foundationFasterForm))"))
        #expect(report.typedOverBytes > 0 && report.table().contains("ratio typed/bytes"))
    }
}
