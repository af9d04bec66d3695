import Foundation
import NotificationBus

/// Options of a requester worker: `count` requests at once from one bus, through a broker.
package struct RequestWorkerOptions: Sendable, Codable {
    /// The broker's frontend (publishers) and backend (subscribers).
    package var frontend: String
    package var backend: String
    /// The requests' name.
    package var name: String
    /// Requests sent at once from this process's one bus.
    package var count: Int = 20
    /// Each request's timeout, seconds.
    package var timeoutSeconds: Double = 30
    /// Seconds until the worker gives up altogether (exit 4).
    package var hardDeadlineSeconds: Int = 300

    package init(frontend: String, backend: String, name: String) {
        self.frontend = frontend
        self.backend = backend
        self.name = name
    }
}

extension RequestWorkerOptions: BenchWorkerOptions {
    static let template = RequestWorkerOptions(frontend: "", backend: "", name: "")
    static let requiredKeys = ["frontend", "backend", "name"]
    static let optionalKeys: [String] = []
    static let example = #"{"frontend":"ipc:///tmp/f.sock","backend":"ipc:///tmp/b.sock","name":"echo.x","count":20}"#

    var outOfRange: String? {
        typealias C = BenchWorkerCommand
        guard timeoutSeconds.isFinite else { return "timeoutSeconds must be a number, got \(timeoutSeconds)" }
        // Only validity matters here; the message below says what is wrong in the options' terms.
        if (try? NotificationName(name)) == nil { return "name must be a valid notification name, got '\(name)'" }
        return C.range("count", count, 1...100_000) ?? C.range("timeoutSeconds", timeoutSeconds, 0.001...3_600)
            ?? C.range("hardDeadlineSeconds", hardDeadlineSeconds, 1...86_400)
    }
}

/// What became of a requester worker's requests: its one JSON line on stdout.
package struct RequestWorkerResult: Sendable, Codable, Equatable {
    /// Replies whose payload was the request's own (an echo responder's answer).
    package var answered = 0
    /// Replies with another payload (another request's reply: they must never cross).
    package var wrongPayload = 0
    package var noResponders = 0
    package var timedOut = 0
    /// Other errors, by their text.
    package var otherErrors: [String] = []
    /// The slowest request's outcome, seconds from its start.
    package var slowestSeconds = 0.0
}

/// `nbus bench worker requests`: sends `count` requests at once on one brokered bus, each with a
/// payload of its own, and reports how each ended. The request/reply load test runs fifty.
enum RequestWorker {
    static func run(_ options: RequestWorkerOptions) async -> Int32 {
        await WorkerProcess.run(
            kind: .requests, role: "requester", hardDeadlineSeconds: options.hardDeadlineSeconds, exitWhenRunnerGone: false
        ) {
            let name = try NotificationName(options.name)
            let bus = try Bus(.brokered(frontend: options.frontend, backend: options.backend))
            let timeout = Duration.milliseconds(Int64(options.timeoutSeconds * 1_000))
            let token = UInt64.random(in: 0...UInt64.max)
            let outcomes = await withTaskGroup(of: (Result<[UInt8], BusError>, payload: [UInt8], seconds: Double).self) { group in
                for index in 0..<options.count {
                    group.addTask {
                        let payload = Array("\(token).\(index)".utf8)
                        let clock = ContinuousClock()
                        let start = clock.now
                        let result: Result<[UInt8], BusError>
                        do throws(BusError) {
                            result = .success(try await bus.request(name, payload: payload, timeout: timeout).payload)
                        } catch {
                            result = .failure(error)
                        }
                        return (result, payload, Timestamps.seconds(start.duration(to: clock.now)))
                    }
                }
                var all: [(Result<[UInt8], BusError>, payload: [UInt8], seconds: Double)] = []
                for await outcome in group { all.append(outcome) }
                return all
            }
            await bus.close()
            var result = RequestWorkerResult()
            for (outcome, payload, seconds) in outcomes {
                result.slowestSeconds = max(result.slowestSeconds, seconds)
                switch outcome {
                case .success(let reply) where reply == payload: result.answered += 1
                case .success: result.wrongPayload += 1
                case .failure(let error) where error.code == .noResponders: result.noResponders += 1
                case .failure(let error) where error.code == .timedOut: result.timedOut += 1
                case .failure(let error): result.otherErrors.append("\(error)")
                }
            }
            WorkerProcess.emitJSON(result)
            return result.answered == options.count ? 0 : 1
        }
    }
}
