import ArgumentParser
import BusBench
import Foundation

/// `nbus bench`: benchmarks that start real processes.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Benchmarks with real processes and sockets, against a raw-libzmq baseline.",
        subcommands: [
            BenchThroughput.self, BenchOverload.self, BenchViews.self, BenchSweep.self, BenchFilter.self, BenchWorker.self,
            BenchPeerClient.self,
        ]
    )
}

extension ThroughputOptions.Transport: ExpressibleByArgument {}
extension ThroughputOptions.Topology: ExpressibleByArgument {}
extension BusWorkerOptions.Role: ExpressibleByArgument {}
extension OverloadWorkerOptions.Role: ExpressibleByArgument {}
extension OverloadPolicy: ExpressibleByArgument {}

extension BenchWorkerCommand.Kind: ExpressibleByArgument {}

/// A benchmark's own option check (`BenchError.invalidOptions`), run from a command's `validate()`,
/// so a bad value is a usage error like ArgumentParser's own: exit 64 and this command's usage.
func checkBenchOptions(_ check: () throws -> Void) throws {
    do {
        try check()
    } catch let error as BenchError {
        throw ValidationError(error.description)
    }
}
