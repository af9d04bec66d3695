import Foundation
import ToolSupport
import NotificationBus
import Testing

@testable import BusBench

@Suite("Process memory from /proc")
struct ProcessMemoryTests {
    @Test("VmRSS and VmHWM are parsed from a status text (tab and spaces, kB)")
    func parse() {
        let text = "Name:\tnbus\nVmPeak:\t  900000 kB\nVmHWM:\t  123456 kB\nVmRSS:\t   65432 kB\nThreads:\t7\n"
        #expect(ProcessMemory.parse(status: text) == ProcessMemory(residentKiB: 65_432, peakResidentKiB: 123_456))
        #expect(ProcessMemory.parse(status: "Name:\tzombie\nState:\tZ (zombie)\n") == nil)
    }

    @Test("This process's own status reads, and the sampler sees it")
    func ownStatus() throws {
        let memory = try #require(ProcessMemory.read())
        #expect(memory.residentKiB > 0 && memory.peakResidentKiB >= memory.residentKiB)
        let sampler = MemorySampler(pid: nil, intervalMilliseconds: 5)
        sampler.start()
        let samples = sampler.stop()
        #expect(!samples.residentKiB.isEmpty)
        #expect(samples.peakResidentKiB >= samples.maximumResidentKiB && samples.maximumResidentKiB > 0)
        #expect(ProcessMemory.read(pid: -1) == nil)
    }
}

@Suite("Overload report")
struct OverloadReportTests {
    /// A report with a consistent set of counters (published 1,000), optionally disturbed.
    private func report(
        tailUncounted: UInt64 = 0, peakKiB: UInt64 = 50_000, endedBy: String = "endOfStream"
    ) -> OverloadReport {
        let publisher = OverloadPublisherResult(
            posts: 1_000, postNanoseconds: 1_000_000_000, closeNanoseconds: 2_000_000_000, posted: 1_000, sent: 1_000,
            unsent: 0, endOfStreamUnacknowledged: tailUncounted > 0 ? 1 : 0, highWaterMark: 10_000,
            closeTimeoutMilliseconds: 2_000, publisherBackpressure: false, memory: nil)
        var stats = SubscriptionStats()
        stats.received = 400
        stats.delivered = 300
        stats.droppedLocalBuffer = 100
        stats.lostUpstream = 600 - tailUncounted
        var consumed = OverloadConsumed()
        consumed.notifications = 300
        consumed.firstSequence = 1
        consumed.highestSequence = 1_000 - tailUncounted
        consumed.upstreamLost = stats.lostUpstream
        consumed.localDropped = 100
        var memory = MemorySamples(intervalMilliseconds: 250)
        memory.add(ProcessMemory(residentKiB: peakKiB - 10, peakResidentKiB: peakKiB))
        var busStats = BusStats()
        busStats.endOfStreamRecords = tailUncounted > 0 ? 0 : 1
        let subscriber = OverloadSubscriberResult(
            policy: .dropOldest, capacity: 64, handlerMicroseconds: 100, highWaterMark: 10_000, consumed: consumed,
            subscription: stats, bus: OverloadBusCounters(busStats), endedBy: endedBy,
            subscribedToFirstNanoseconds: 1_000, consumingNanoseconds: 30_000_000, drainAfterEndOfStreamNanoseconds: 1_000,
            memory: memory)
        return OverloadReport(
            options: OverloadOptions(), publisher: publisher, subscriber: subscriber, subscriberSeenByRunner: memory,
            publisherSeenByRunner: MemorySamples(intervalMilliseconds: 250), wallNanoseconds: 3_000_000_000)
    }

    @Test("A consistent run passes: the identity holds, memory within the limit")
    func passes() throws {
        let report = report()
        #expect(report.published == 1_000 && report.accounted == 1_000 && report.identityHolds)
        #expect(report.memoryWithinLimit)
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.table().contains("HOLDS (1,000 == 1,000)"))
        let json = try report.json()
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        let summary = object?["summary"] as? [String: Any]
        #expect(summary?["identityHolds"] as? Bool == true)
        #expect(summary?["difference"] as? Int == 0)
    }

    @Test("An uncounted tail breaks the identity by exactly its size, and the diagnosis names it")
    func uncountedTail() {
        let report = report(tailUncounted: 250, endedBy: "publisherExited")
        #expect(!report.identityHolds && report.difference == 250)
        #expect(report.failures.contains { $0.hasPrefix("identity:") && $0.contains("= 750") })
        #expect(report.diagnosis.contains { $0.contains("tail after sequence 750") && $0.contains("250 notification(s), exactly the difference") })
        #expect(report.table().contains("DOES NOT HOLD (difference 250)"))
    }

    @Test("Peak RSS at or above the limit fails")
    func memoryLimit() {
        let report = report(peakKiB: 200_000_000 / 1_024 + 1)
        #expect(!report.memoryWithinLimit)
        #expect(report.failures.contains { $0.hasPrefix("memory:") })
        #expect(report.identityHolds)
    }

    @Test("The worker arguments round-trip the options")
    func workerArguments() throws {
        var options = OverloadWorkerOptions(role: .subscriber, endpoint: "ipc:///tmp/x.sock")
        options.policy = .suspend
        options.buffer = 128
        options.exitOnStandardInputEOF = true
        let arguments = options.arguments(command: ["bench", "worker"])
        #expect(Array(arguments.prefix(3)) == ["bench", "worker", "overload"] && arguments.count == 4)
        let decoded = try JSONDecoder().decode(OverloadWorkerOptions.self, from: Data(try #require(arguments.last).utf8))
        #expect(decoded.role == .subscriber && decoded.policy == .suspend && decoded.buffer == 128)
        #expect(decoded.exitOnStandardInputEOF && decoded.endpoint == "ipc:///tmp/x.sock")
        #expect(OverloadPolicy.suspend.buffering(capacity: 128) == .suspendProducer(capacity: 128))
    }
}

/// The built `nbus`, next to the test bundle, when `nbus bench worker` is registered.
private let builtOverloadExecutable: String? = {
    var directory = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").deletingLastPathComponent()
    for _ in 0..<4 {
        let nbus = directory.appendingPathComponent("nbus").path
        if FileManager.default.isExecutableFile(atPath: nbus) {
            guard let probe = try? SpawnedProcess.run(nbus, ["bench", "worker", "--help"]) else { return nil }
            return probe.status == 0 ? nbus : nil
        }
        directory.deleteLastPathComponent()
    }
    return nil
}()

@Suite("nbus bench overload, real processes", .timeLimit(.minutes(2)))
struct OverloadEndToEndTests {
    @Test(
        "2 s of overload with small sizes: losses counted exactly, the identity holds, memory bounded",
        .enabled(if: builtOverloadExecutable != nil, "needs nbus (with `bench worker`) built"),
        .timeLimit(.minutes(2)))
    func shortRun() async throws {
        var options = OverloadOptions()
        options.nbusExecutable = try #require(builtOverloadExecutable)
        options.seconds = 2
        options.size = 256
        options.buffer = 256
        options.highWaterMark = 1_000
        options.handlerMicroseconds = 100
        options.timeoutSeconds = 60
        let report = try await OverloadBenchmark.run(options)
        #expect(report.failures.isEmpty, "\(report.failures) \(report.diagnosis)")
        #expect(report.identityHolds)
        #expect(report.subscriber.endedBy == "endOfStream")
        #expect(report.published > 0 && report.published == report.publisher.posts)
        // Overloaded: far more was published than the handler could take in 2 s, and the rest was lost, counted.
        #expect(report.subscriber.subscription.delivered < report.published)
        #expect(report.subscriber.subscription.lostUpstream + report.subscriber.subscription.droppedLocalBuffer > 0)
        #expect(report.subscriber.memory.peakResidentKiB > 0 && report.subscriberSeenByRunner.peakResidentKiB > 0)
        #expect(report.memoryWithinLimit)
    }
}
