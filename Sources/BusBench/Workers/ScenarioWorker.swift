import Foundation
import NotificationBus
import Synchronization
import ToolSupport

#if canImport(Glibc)
import Glibc
#endif

/// What the views publisher reports when it is done (its `done` line).
package struct ScenarioPublisherResult: Codable, Sendable, Equatable {
    package var event = "done"
    /// Notifications posted per name index (so per name: sequence numbers 1...posted).
    package var postedPerName: [UInt64]
    /// Of those, how many match (first payload byte 1).
    package var matchingPerName: [UInt64]
    /// Wall-clock time of the first and the last post, ns since the epoch.
    package var firstPostWallNanoseconds: UInt64
    package var lastPostWallNanoseconds: UInt64
    /// Time in the posting loop and in `close()`, ns.
    package var postNanoseconds: UInt64
    package var closeNanoseconds: UInt64
    /// The rate asked for (0: max).
    package var requestedRate: Int
    /// The publisher bus's counters after close.
    package var bus: BusCounters
    /// `BusStats.endOfStreamUnacknowledged` at close.
    package var endOfStreamUnacknowledged: UInt64
    /// Why posting stopped: `count` or `seconds`.
    package var stoppedBy: String
    /// Notifications posted so far, sampled about every 250 ms from the first post to the last
    /// (the time series' "published").
    package var timeline: [PostingSample] = []

    /// All notifications posted.
    package var posted: UInt64 { postedPerName.reduce(0, +) }

    /// Posts per second over the posting loop.
    package var postRate: Double { ratePerSecond(Int(posted), postNanoseconds) }

    /// First to last post, ns (the publishing window).
    package var windowNanoseconds: UInt64 {
        lastPostWallNanoseconds > firstPostWallNanoseconds ? lastPostWallNanoseconds - firstPostWallNanoseconds : 0
    }
}

/// The publisher's count at one moment.
package struct PostingSample: Codable, Sendable, Equatable {
    /// Wall clock, ns since the epoch (the hosts' samples use the same clock: one machine).
    package var wallNanoseconds: UInt64
    /// Notifications posted so far, every name.
    package var posted: UInt64

    package init(wallNanoseconds: UInt64, posted: UInt64) {
        self.wallNanoseconds = wallNanoseconds
        self.posted = posted
    }
}

/// A subscriber host's counters at one moment, summed over its views (cumulative since ready),
/// and the latency of the state updates made since the previous sample.
package struct HostSample: Codable, Sendable, Equatable {
    /// Wall clock, ns since the epoch.
    package var wallNanoseconds: UInt64
    /// Notifications handed to the views' code so far.
    package var delivered: UInt64 = 0
    /// Losses so far, by cause.
    package var lostUpstream: UInt64 = 0
    package var droppedLocalBuffer: UInt64 = 0
    package var missedWhileHidden: UInt64 = 0
    /// Notifications replayed on reappear so far.
    package var replayed: UInt64 = 0
    /// Main-actor busy time so far (runtime accounting), ns.
    package var mainActorBusyNanoseconds: UInt64 = 0
    /// Publish-to-state-update latency of the updates since the previous sample: how many, p50,
    /// p99 (ns; 0 when none).
    package var latencyCount: UInt64 = 0
    package var latencyP50: UInt64 = 0
    package var latencyP99: UInt64 = 0

    package init(wallNanoseconds: UInt64) {
        self.wallNanoseconds = wallNanoseconds
    }
}

/// One view's counters as a subscriber host reports them: what its own code saw (`probe`), what
/// its bus subscription counted, and what the runtime counted (deltas since the host was ready).
package struct ScenarioViewCounters: Codable, Sendable, Equatable {
    /// The view's index and the (first) name index it subscribes to.
    package var view: Int
    package var name: Int
    /// Every name index it subscribes to, and per name the highest sequence number its code saw
    /// (same order; empty in results of older workers: then `name` and `lastSequence` say it).
    package var names: [Int] = []
    package var lastSequences: [UInt64] = []
    /// The view's page (tab or list window).
    package var page: Int
    // The view's own code:
    /// Notifications handed to the view's code (the `onReceive` action, or one loop iteration).
    package var delivered: UInt64 = 0
    /// Of those, the ones that passed the condition (the code then wrote state).
    package var matched: UInt64 = 0
    /// The first and highest sequence number seen; sequence numbers skipped between them (and
    /// before the first); sequence numbers not above the previous one (none expected).
    package var firstSequence: UInt64 = 0
    package var lastSequence: UInt64 = 0
    package var skippedSequences: UInt64 = 0
    package var outOfOrder: UInt64 = 0
    /// Gap events the loop was handed (task styles), by cause, summed counts.
    package var inBandHidden: UInt64 = 0
    package var inBandUpstream: UInt64 = 0
    package var inBandLocal: UInt64 = 0
    // The bus subscription (the `onReceive` observer's or the task feed's):
    package var received: UInt64 = 0
    package var lostUpstream: UInt64 = 0
    package var droppedLocalBuffer: UInt64 = 0
    package var discardedAtEnd: UInt64 = 0
    package var buffered: UInt64 = 0
    // The runtime (`ViewMetrics`, since ready):
    package var bodyEvaluations: UInt64 = 0
    package var stateUpdates: UInt64 = 0
    package var messagesHandled: UInt64 = 0
    package var missedWhileHidden: UInt64 = 0
    package var replayed: UInt64 = 0
    package var mainActorBusyNanoseconds: UInt64 = 0
    package var handlingNanoseconds: UInt64 = 0
    package var appearances: UInt64 = 0
    package var disappearances: UInt64 = 0
    /// Time the view was hidden within the publishing window, ns.
    package var hiddenNanoseconds: UInt64 = 0

    package init(view: Int, name: Int, page: Int, names: [Int]? = nil) {
        self.view = view
        self.name = name
        self.page = page
        self.names = names ?? [name]
    }

    /// The names the view subscribes to, with the highest sequence number seen on each.
    package var sequencesByName: [(name: Int, last: UInt64)] {
        if names.isEmpty { return [(name, lastSequence)] }
        if names.count == 1 && lastSequences.isEmpty { return [(names[0], lastSequence)] }
        return names.enumerated().map { ($0.element, $0.offset < lastSequences.count ? lastSequences[$0.offset] : 0) }
    }

    /// Every cause of loss plus what was delivered: what the identity compares with published.
    package var accounted: UInt64 { delivered + lostUpstream + droppedLocalBuffer + missedWhileHidden + discardedAtEnd }
}

/// What a subscriber host reports (its `result` line).
package struct ScenarioHostResult: Codable, Sendable {
    package var event = "result"
    package var style: ViewStyle
    /// Per view.
    package var views: [ScenarioViewCounters]
    /// Publish-to-state-update latency over every view (`ViewMetrics.latency` merged).
    package var latency: LatencySummary
    /// From ready to the end of the drain, ns (the denominator of busy %).
    package var windowNanoseconds: UInt64
    /// How long a job enqueued on the main actor waited to run, sampled every 20 ms over the
    /// window from a task off the main actor: the main actor's responsiveness, ns.
    package var mainActorPing: LatencySummary
    /// The process's CPU time (getrusage) over the window, and over its whole life, ns.
    package var windowUserNanoseconds: UInt64
    package var windowSystemNanoseconds: UInt64
    package var totalUserNanoseconds: UInt64
    package var totalSystemNanoseconds: UInt64
    /// Peak resident set size (`VmHWM` of /proc/self/status), KiB.
    package var peakResidentKiB: UInt64
    /// Visibility changes made by the churn timer while the publisher was posting.
    package var churnTransitions: Int
    /// Whether the drain ended without everything accounted (stall or deadline).
    package var drainIncomplete: Bool
    /// The drain phase's duration, ns (publisher done to report).
    package var drainNanoseconds: UInt64
    /// Subscriptions that could not be made.
    package var subscriptionErrors: [String]
    /// End-of-stream records the host's bus processed.
    package var endOfStreamRecords: UInt64
    /// Which names the host's views subscribed to.
    package var subscription: ViewSubscription = .spread
    /// Notifications that reached the host's socket (`BusStats.notificationsReceived`: a batch
    /// frame counts as the notifications it carries, so CPU per frame stays CPU per notification,
    /// comparable with raw libzmq's per message): with exact-name subscriptions ZeroMQ filters the
    /// other names at the publisher, so they never count here.
    package var framesReceived: UInt64 = 0
    /// The host's counters about every 250 ms, from ready to the end of its drain.
    package var timeline: [HostSample] = []
    /// Wall-clock times (ns) of the churn's visibility changes (tab switch or scroll) while it ran.
    package var visibilityChanges: [UInt64] = []
}

/// What one process of `nbus bench views` (and `filter`) does (`nbus bench worker views`).
package struct ViewsWorkerOptions: Sendable, Codable {
    /// The scenario; a host's carries its own subscription.
    package var scenario: ViewsScenario
    /// Which process this is.
    package var role: ViewsWorker.Role
    /// Where the publisher binds / a host connects.
    package var endpoint: String
    /// A host's consumer style (required for a host).
    package var style: ViewStyle?
    /// Publisher: each host's subscription, so it knows how many hosts to wait for on each name.
    package var hostSubscriptions: [ViewSubscription]
    /// Exit as soon as stdin reaches end of file (the runner holds the pipe's write end).
    package var exitOnStandardInputEOF = true

    /// Options for `role`; a publisher waits for `hostSubscriptions` (one per host).
    package init(
        scenario: ViewsScenario, role: ViewsWorker.Role, endpoint: String, style: ViewStyle? = nil,
        hostSubscriptions: [ViewSubscription] = []
    ) {
        self.scenario = scenario
        self.role = role
        self.endpoint = endpoint
        self.style = style
        self.hostSubscriptions = hostSubscriptions
    }

    /// The command line that runs this worker through `command` (see `BenchWorkerCommand`).
    func arguments(command: [String]) -> [String] {
        BenchWorkerCommand.arguments(command, .views, self)
    }
}

extension ViewsWorkerOptions: BenchWorkerOptions {
    static let template = ViewsWorkerOptions(scenario: ViewsScenario(), role: .publisher, endpoint: "")
    static let requiredKeys = ["role", "endpoint"]
    static let optionalKeys = ["style"]
    static let example = #"{"role":"host","endpoint":"ipc:///tmp/v.sock","style":"onReceive"}"#

    var outOfRange: String? {
        do {
            try scenario.validate()
            return nil
        } catch {
            return "scenario: \(error)"
        }
    }
}

/// The worker processes of `nbus bench views`: the publisher and the subscriber hosts.
///
/// JSON lines on stdout (`WorkerProcess`): the publisher prints `bound`, `subscribed` (every
/// host's subscriptions reached it), then, once the runner writes `go` on its stdin, `started`
/// and at the end `done` (`ScenarioPublisherResult`); a host prints `ready`, then `result` (`ScenarioHostResult`) once
/// it has read the publisher's `done` line (prefixed `published `) on stdin and drained.
package enum ViewsWorker {
    /// The worker's two roles.
    package enum Role: String, Sendable, CaseIterable, Codable {
        case publisher, host
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
        // Each part at most a year: hand-written options may hold anything (Int(_:) traps past Int).
        let year = 31_536_000
        let seconds = scenario.seconds.isFinite ? Int(min(max(scenario.seconds, 0), Double(year)).rounded(.up)) : year
        let hardDeadline = seconds + min(scenario.startupSeconds, year) + min(scenario.drainSeconds, year) + 30
        return await WorkerProcess.run(
            kind: .views, role: options.role.rawValue, hardDeadlineSeconds: hardDeadline,
            exitWhenRunnerGone: options.exitOnStandardInputEOF,
            onControlLine: { line in
                if line == goLine { go.finish() }
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

/// CPU time and peak memory of this process.
enum ProcessUsage {
    private static let RUSAGE_SELF_WHO = __rusage_who_t(RUSAGE_SELF.rawValue)

    /// User and system CPU time of the whole process, ns, and its peak RSS (KiB).
    ///
    /// The peak is the kernel's `VmHWM`, not `ru_maxrss`: Linux carries `ru_maxrss` across
    /// `execve`, and a child spawned with `posix_spawn` (vfork-style, sharing the parent's memory
    /// until exec) starts with the parent's peak, the benchmark runner's. `VmHWM` belongs to the
    /// process's own address space.
    static func current() -> (user: UInt64, system: UInt64, maxResidentKiB: UInt64) {
        var usage = Glibc.rusage()
        getrusage(RUSAGE_SELF_WHO, &usage)
        func nanoseconds(_ time: timeval) -> UInt64 { UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_usec) * 1_000 }
        let peak = ProcessMemory.read()?.peakResidentKiB ?? UInt64(max(0, usage.ru_maxrss))
        return (nanoseconds(usage.ru_utime), nanoseconds(usage.ru_stime), peak)
    }
}
