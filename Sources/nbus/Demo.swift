import ArgumentParser
import NotificationBus

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Post a few notifications over inproc:// in one process and print them decoded.")

    @Option(name: .shortAndLong, help: "How many notifications to post (1-10000).")
    var count: Int = 5

    func validate() throws {
        guard (1...10_000).contains(count) else { throw ValidationError("--count must be between 1 and 10000") }
    }

    func run() async throws {
        try await EmbeddedDemo.run(count: count) { print($0) }
    }
}
