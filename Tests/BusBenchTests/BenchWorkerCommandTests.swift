import Foundation
import ToolSupport
import Synchronization
import TestSupport
import Testing
@testable import BusBench

#if canImport(Glibc)
import Glibc
#endif


@Suite("nbus bench worker: one hidden command, options as JSON", .timeLimit(.minutes(2)))
struct BenchWorkerCommandTests {
    @Test("Options missing a required key are a usage error that names it, not a crash")
    func badOptions() async throws {
        let executables = try #require(builtExecutables, "needs nbus built")
        let (status, errors) = try await runBlocking { () -> (Int32, String) in
            // Its standard output is empty: merged, it leaves the errors alone.
            try SpawnedProcess.run(
                executables.nbus, BenchWorkerCommand.nbusSubcommand + ["throughput", #"{"role":"publisher"}"#],
                mergingStandardError: true)
        }
        #expect(status == BenchWorkerCommand.usageStatus)
        #expect(errors.contains("missing required key(s) 'endpoint', 'count'"), "\(errors)")
    }

    @Test("Every worker's options survive the command line the runner builds")
    func roundTrip() throws {
        var throughput = BusWorkerOptions(role: .subscriber, endpoint: "ipc:///tmp/w.sock", count: 7)
        throughput.connectPublisher = true
        throughput.rate = 10_000
        let arguments = throughput.arguments(command: ["bench", "worker"])
        #expect(Array(arguments.prefix(3)) == ["bench", "worker", "throughput"] && arguments.count == 4)
        let decoded = try JSONDecoder().decode(BusWorkerOptions.self, from: Data(try #require(arguments.last).utf8))
        #expect(decoded.role == .subscriber && decoded.count == 7 && decoded.rate == 10_000 && decoded.connectPublisher)
    }
}

@Suite("nbus bench worker options by hand")
struct BenchWorkerOptionsTests {
    @Test("Keys left out keep their defaults; missing required and unknown keys are named")
    func defaults() throws {
        let options = try BenchWorkerCommand.decode(
            BusWorkerOptions.self, #"{"role":"subscriber","endpoint":"ipc:///tmp/a.sock","count":5,"rate":100}"#)
        #expect(options.role == .subscriber && options.count == 5 && options.rate == 100)
        #expect(options.size == BusWorkerOptions.template.size && options.timeoutSeconds == 120)
        do {
            _ = try BenchWorkerCommand.decode(BusWorkerOptions.self, #"{"role":"publisher","bogus":1}"#)
            Issue.record("missing keys were accepted")
        } catch {
            // Both problems at once, each named.
            #expect(error.description.contains("missing required key(s) 'endpoint', 'count'"), "\(error)")
            #expect(error.description.contains("unknown key(s) 'bogus'"), "\(error)")
        }
        do {
            _ = try BenchWorkerCommand.decode(BusWorkerOptions.self, #"{"role":"publisher","endpoint":"x","count":1,"sizes":3}"#)
            Issue.record("an unknown key was accepted")
        } catch {
            #expect(error.description.contains("unknown key(s) 'sizes'") && error.description.contains("size"))
        }
        do {
            _ = try BenchWorkerCommand.decode(OverloadWorkerOptions.self, "[1]")
            Issue.record("a JSON array was accepted")
        } catch {
            #expect(error.description.contains("one JSON object"))
        }
        do {
            _ = try BenchWorkerCommand.decode(
                BusWorkerOptions.self, #"{"role":"subscriber","endpoint":"x","count":1,"timeoutSeconds":9223372036854775807}"#)
            Issue.record("a timeout the worker would trap on was accepted")
        } catch {
            #expect(error.description.contains("timeoutSeconds must be from 1 to 31536000"), "\(error)")
        }
        let views = try BenchWorkerCommand.decode(ViewsWorkerOptions.self, ViewsWorkerOptions.example)
        #expect(views.role == .host && views.style == .onReceive && views.scenario == ViewsScenario())
    }
}
