import Foundation
import NotificationBus

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
