import Foundation
import NotificationBus
import Synchronization
import ToolSupport

#if canImport(Glibc)
import Glibc
#endif

/// The worker processes of `nbus bench views`: the publisher and the subscriber hosts.
///
/// JSON lines on stdout (`WorkerProcess`): the publisher prints `bound`, `subscribed` (every
/// host's subscriptions reached it), then, once the runner writes `go` on its stdin, `started`
/// and at the end `done` (`ScenarioPublisherResult`); a host prints `ready`, then `result` (`ScenarioHostResult`) once
/// it has read the publisher's `done` line (prefixed `published `) on stdin and drained.
package enum ViewsWorker {
    /// The worker's roles: the scenario's publisher and hosts, and the demo's retained-views
    /// publisher and host (`RetainedViewsDemo`).
    package enum Role: String, Sendable, CaseIterable, Codable {
        case publisher, host, retainedPublisher, retainedHost
    }

    /// The stdin line prefix by which the runner hands a host the publisher's result.
    static let publishedPrefix = "published "
    /// The stdin line by which the runner lets the publisher start posting (every host is ready).
    static let goLine = "go"

    /// The publisher's `progress` line while it posts, about every `progressIntervalNanoseconds`.
    struct ProgressLine: Codable, Sendable {
        var event = "progress"
        /// Notifications posted so far, and seconds since the first post.
        var posted: Int
        var elapsedNanoseconds: UInt64
    }

    static let progressIntervalNanoseconds: UInt64 = 250_000_000

    /// Runs a worker and returns its exit status (0: reported, 1: failed).
    package static func run(_ options: ViewsWorkerOptions) async -> Int32 {
        let scenario = options.scenario
        let published = OneShot<ScenarioPublisherResult>()
        let go = OneShot<Void>()
        let stop = OneShot<Void>()
        // Each part at most a year: hand-written options may hold anything (Int(_:) traps past Int).
        let year = 31_536_000
        let seconds = scenario.seconds.isFinite ? Int(min(max(scenario.seconds, 0), Double(year)).rounded(.up)) : year
        let hardDeadline = seconds + min(scenario.startupSeconds, year) + min(scenario.drainSeconds, year) + 30
        return await WorkerProcess.run(
            kind: .views, role: options.role.rawValue, hardDeadlineSeconds: hardDeadline,
            exitWhenRunnerGone: options.exitOnStandardInputEOF,
            onControlLine: { line in
                if line == goLine { go.finish() }
                if line == RetainedViewsDemo.stopLine { stop.finish() }
                guard line.hasPrefix(publishedPrefix) else { return }
                do {
                    let result = try JSONDecoder().decode(
                        ScenarioPublisherResult.self, from: Data(line.dropFirst(publishedPrefix.count).utf8))
                    published.finish(result)
                } catch {
                    // The runner wrote a line this worker cannot read (two builds mixed): say so
                    // on stderr rather than wait in silence; the worker ends at its hard deadline.
                    WorkerProcess.writeStandardError("cannot read the runner's published line: \(error)\n")
                }
            }
        ) {
            switch options.role {
            case .publisher:
                let subscriptions = options.hostSubscriptions.isEmpty ? [scenario.subscription] : options.hostSubscriptions
                let result = try await ScenarioPublisher.run(
                    scenario, endpoint: options.endpoint, hostSubscriptions: subscriptions,
                    bound: { WorkerProcess.emitJSON(BoundOut(endpoint: $0)) },
                    progress: { posted, elapsed in
                        WorkerProcess.emitJSON(ProgressLine(posted: posted, elapsedNanoseconds: elapsed))
                    },
                    subscribed: {
                        WorkerProcess.emitLine(#"{"event":"subscribed"}"#)
                        guard await go.value != nil else { throw CancellationError() }
                        WorkerProcess.emitLine(#"{"event":"started"}"#)
                    })
                WorkerProcess.emitJSON(result)
                return 0
            case .retainedPublisher:
                try await RetainedViewsDemo.publish(
                    endpoint: options.endpoint, go: { await go.value != nil }, stop: { _ = await stop.value })
                return 0
            case .retainedHost:
                let result = try await RetainedViewsDemo.host(
                    endpoint: options.endpoint, ready: { WorkerProcess.emitLine(#"{"event":"ready"}"#) })
                WorkerProcess.emitJSON(result)
                return 0
            case .host:
                guard let style = options.style else {
                    WorkerProcess.writeStandardError("nbus bench worker views (host): a host needs a style\n")
                    return 1
                }
                let result = try await ScenarioHost.run(
                    scenario, style: style, endpoint: options.endpoint,
                    ready: { WorkerProcess.emitLine(#"{"event":"ready","style":"\#(style.rawValue)"}"#) },
                    published: {
                        guard let result = await published.value else { throw CancellationError() }
                        return result
                    })
                WorkerProcess.emitJSON(result)
                return 0
            }
        }
    }

    private struct BoundOut: Encodable {
        var event = "bound"
        var endpoint: String
    }
}
